"""A `@property` getter of a package class runs when it is read.

cudnn vendors the DSL's tile scheduler (`_cutlass_helpers/static_persistent_tile_scheduler.py`);
its `num_tiles_executed` is a `@property` returning the counter `advance_to_next_work` bumps, and
the epilogue picks its shared-memory buffer from it (`(num_prev_subtiles + i) % num_d_stage`).
Read as the method itself, the buffer index does not fold and the buffer the epilogue writes is
any of them; run, the index is the tile count of that iteration.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source

SETTINGS = Settings(verify_fixes=False)

COUNTER_CLASS = """

class TileCounter:
    def __init__(self, done):
        self._done = done

    def advance(self):
        self._done += 1

    @property
    def done(self):
        return self._done
"""

# Warp 0 writes the 32-element buffer of the tile count it has reached; warp 1 reads buffer 1
# with no barrier in between.
BODY = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
counter = TileCounter(0)
if warp_idx == 0:
{advance}    sBuf[lane + 32 * counter.done] = 1.0
if warp_idx == 1:
    x = sBuf[lane + 32]
"""


def check(advance: str):
    src = kernel_source(BODY.format(advance=advance)) + COUNTER_CLASS
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return k


def test_the_getter_gives_the_buffer_of_the_first_tile(require_spin):
    k = check("")
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])


def test_the_getter_follows_the_counter_the_method_advances(require_spin):
    # After one advance warp 0 writes buffer 1, which warp 1 reads: a definite race.
    k = check("    counter.advance()\n")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible
