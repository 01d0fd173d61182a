"""A race found only through accesses whose element index did not fold is a possible race.

`red[rpc * wn + rit * wn + j]` with `rpc`, `wn` unknown is taken as the whole buffer, so the model
can find two warps touching `red` when on the GPU they touch different elements (cudnn's
LayerNorm writes its variance partials and reads its mean partials in two halves of one
buffer). Such a race makes the verdict inconclusive, with the lines named, never a
counterexample; a race through exact indices stays a counterexample.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

BODY = """\
smem = cutlass.utils.SmemAllocator()
red = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
half = mA.shape[0]
red[half + warp] = 1.0
cute.arch.sync_threads()
x = red[half + 1 - warp]
red[warp] = x
"""


def check(body):
    src = kernel_source(body)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_a_race_through_unknown_indices_is_possible_not_a_counterexample(require_spin):
    src, k = check(BODY)
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "element index is not known" in k.reason and "not told apart by element" in k.findings[0].message
    assert f"line {line_of(src, 'red[half + warp] = 1.0')}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible and f.message.startswith("possible data race")


def test_the_same_kernel_with_known_disjoint_indices_is_verified(require_spin):
    # The reads (elements 32, 33) and the last writes (elements 0, 1) never meet.
    _, k = check(BODY.replace("half = mA.shape[0]", "half = 32"))
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_a_race_through_known_overlapping_indices_is_a_counterexample(require_spin):
    # Warp 0 reads element 1 while warp 1 overwrites it after the barrier.
    src, k = check(BODY.replace("half = mA.shape[0]", "half = 0"))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible
