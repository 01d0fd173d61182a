"""A shared-memory atomic through a pointer at a known offset writes that element.

cudnn's DSA top-k partitioning keeps its counters in one small buffer (`meta`: lengths in
[0:2], counts in [2:5]) and bumps them with `cute.arch.atomic_add((meta.iterator +
Int32(2 + rank)).llvm_ptr, ...)` while other threads read the lengths. The atomic touches
meta[2 + rank] only; taken as the whole buffer it would race with the reads of meta[0]. A
pointer whose offset does not fold stays the whole buffer, and a race through it is possible
(P16), not a counterexample.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

# Thread 0 sets the lengths, a barrier publishes them; then every warp reads meta[0] while lane
# 0 of each warp counts into meta[{slot}].
BODY = """\
smem = cutlass.utils.SmemAllocator()
meta = smem.allocate_tensor(cutlass.Int32, cute.make_layout((8,)))
tidx, _, _ = cute.arch.thread_idx()
lane = cute.arch.lane_idx()
if tidx == 0:
    meta[0] = cutlass.Int32(5)
cute.arch.sync_threads()
length = meta[0]
if lane == 0:
    cute.arch.atomic_add((meta.iterator + {slot}).llvm_ptr, cutlass.Int32(1), sem="relaxed", scope="cta")
"""


def check(slot: str):
    src = kernel_source(BODY.format(slot=slot))
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_an_atomic_on_another_element_does_not_race_with_the_reads(require_spin):
    _, k = check("cutlass.Int32(2)")
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])


def test_an_atomic_on_the_element_read_races(require_spin):
    src, k = check("cutlass.Int32(0)")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible


def test_an_atomic_at_an_offset_that_does_not_fold_is_a_possible_race(require_spin):
    src, k = check("mA.shape[0]")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, 'cute.arch.atomic_add')}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible
