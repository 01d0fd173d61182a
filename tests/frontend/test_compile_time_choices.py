"""Counterexamples through `if const_expr(c):` whose value did not fold.

The compiled kernel keeps one side of such a branch. When `c` is a choice of the build (a host
attribute, a host or Constexpr argument: `const_expr(self.use_fast_sampling)`), each side is a kernel
someone compiles, so a counterexample through either side is real. When `c` is computed from values
the checker could not compute (`warps_per_row > 1` read from a layout's shape), the side the trail
takes may be one no build has: the race is possible, and the verdict says which conditions to pin.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

# Warp 1 writes sBuf and warp 0 reads it; the barrier between them exists on one side only.
BODY = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp == 1:
    sBuf[lane] = 1.0
if cutlass.const_expr(CONDITION):
    cute.arch.sync_threads()
if warp == 0:
    mA[lane] = sBuf[lane]
"""


def check(condition: str, init: str = ""):
    src = kernel_source(BODY.replace("CONDITION", condition), init=init)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_a_race_on_one_side_of_a_build_choice_is_a_counterexample(require_spin):
    src, k = check("self.use_barrier", init="self.use_barrier = use_barrier_from_host()")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible
    assert any("compile-time condition (a choice of the build)" in r.message for r in f.related)


def test_a_race_on_one_side_of_a_computed_compile_time_condition_is_possible(require_spin):
    src, k = check("mA.shape[1] > 1")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and f.possible
    line = line_of(src, "cutlass.const_expr(")
    assert f"compile-time conditions at line {line}" in k.reason and "pin" in k.reason
    assert f.data["compile_time"] == [f"line {line}"]

