"""A race through a shared-memory view selected with an index that did not fold is possible.

`sD[None, None, d_buffer]` with `d_buffer` unknown is taken as the whole buffer, like an element
index that did not fold (P16): the copy it feeds may touch another stage on the GPU than the one
it races with in the model, so the verdict is inconclusive with the line named, never a
counterexample. The same kernel with the stage known is decided either way.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

# Warp 0 copies its registers into stage `d_buffer` of sD while warp 1, with no barrier in
# between, copies stage `read` out.
BODY = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
sD = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 4, self.num_d_stage)))
rD = cute.make_rmem_tensor((32, 4), cutlass.Float32)
d_buffer = {stage}
if warp_idx == 0:
    cute.autovec_copy(rD, sD[None, None, d_buffer])
if warp_idx == 1:
    cute.autovec_copy(sD[None, None, {read}], rD)
"""


def check(stage: str, read: str = "(d_buffer + 1) % self.num_d_stage"):
    src = kernel_source(BODY.format(stage=stage, read=read), init="self.num_d_stage = 2\n")
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_a_copy_through_a_view_at_an_unknown_stage_is_a_possible_race(require_spin):
    src, k = check("mA.shape[0] % self.num_d_stage")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, 'cute.autovec_copy(rD, sD')}" in k.reason
    assert f"line {line_of(src, 'cute.autovec_copy(sD')}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible


def test_the_copy_into_a_known_other_stage_is_verified(require_spin):
    _, k = check("0")
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_the_copy_into_the_stage_read_is_a_counterexample(require_spin):
    _, k = check("0", read="d_buffer")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible


# quack's rotary: the two halves of a buffer, one made by `composition` and the other by
# `domain_offset` from it, written by one warp and read by the other with no barrier between.
HALVES = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 8)))
rX = cute.make_rmem_tensor((32, 4), cutlass.Float32)
sX0 = cute.composition(sX, cute.make_layout((32, 4)))
sX1 = cute.domain_offset({offset}, sX0)
if warp_idx == 0:
    cute.autovec_copy(rX, sX0)
if warp_idx == 1:
    cute.autovec_copy({read}, rX)
"""


def check_halves(offset: str, read: str):
    src = kernel_source(HALVES.format(offset=offset, read=read))
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_two_differently_selected_views_of_one_buffer_race_only_possibly(require_spin):
    # The model keeps one region for sX: a race between the halves may be between different
    # elements, so it is not a counterexample.
    src, k = check_halves("(0, 4)", "sX1")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, 'cute.autovec_copy(sX1')}" in k.reason
    assert k.findings and all(f.possible for f in k.findings)


def test_a_view_and_the_whole_buffer_it_selects_from_still_race(require_spin):
    _, k = check_halves("(0, 4)", "sX")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    # The same view on both sides, or an offset of zero (the same elements): a race.
    _, k = check_halves("(0, 0)", "sX1")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
