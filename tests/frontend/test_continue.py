"""`continue` under a runtime condition inside an unrolled loop: the rest of the iteration runs
only on the paths that did not continue (lightmoe's `if const_expr(self.direct): ...; continue`)."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

BODY = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
tile = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    for i in cutlass.range_constexpr(2):
        if i == 0:
            tile[lane] = 1.0
        if mA[i] > 0:
            SKIP
            continue
        if i == 1:
            cute.arch.mbarrier_arrive(bar)
else:
    cute.arch.mbarrier_wait(bar, 0)
    x = tile[lane]
"""


def _src(skip: str = "pass") -> str:
    return kernel_source(BODY.replace("SKIP", skip))


def test_the_rest_of_the_iteration_runs_on_the_other_side_only():
    k = build_models(_src(), "k.py", Settings())[0]
    assert not k.unmodeled
    producer = k.processes[0].variants[0]
    choices = [op for op in producer if isinstance(op, ir.Choice)]
    assert len(choices) == 2  # one per iteration
    for c in choices:
        continued, went_on = c.alternatives
        assert not any(isinstance(op, ir.MbArrive) for op in continued)
    # The arrive of the second iteration is on the side that did not continue; the first
    # iteration's store runs before either choice.
    assert any(isinstance(op, ir.MbArrive) for op in choices[1].alternatives[1])
    assert isinstance(producer[producer.index(choices[0]) - 1], ir.Access)


def test_a_continue_that_skips_the_arrive_deadlocks_the_consumer(require_spin):
    src = _src()
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    [kr] = fr.kernels
    assert kr.verdict == "counterexample"
    assert kr.findings[0].code == "CS101"
    assert kr.findings[0].span.line == line_of(src, "mbarrier_wait(bar, 0)")


def test_without_the_continue_the_handoff_verifies(require_spin):
    src = kernel_source(BODY.replace("        if mA[i] > 0:\n            SKIP\n            continue\n", ""))
    assert "continue" not in src
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert fr.kernels[0].verdict == "verified", fr.kernels[0].reason


def test_continue_inside_a_nested_branch_keeps_the_outer_side_going():
    k = build_models(_src("if mA[i + 2] > 0:\n                x = 1.0"), "k.py", Settings())[0]
    assert not k.unmodeled


def test_continue_under_a_lane_condition_stays_unmodeled():
    src = kernel_source(BODY.replace("if mA[i] > 0:", "if lane == 0:").replace("SKIP", "pass"))
    k = build_models(src, "k.py", Settings())[0]
    assert any("break/continue" in u.why for u in k.unmodeled)


def test_a_continue_after_the_arrive_no_longer_deadlocks(require_spin):
    moved = BODY.replace("""        if mA[i] > 0:
            SKIP
            continue
        if i == 1:
            cute.arch.mbarrier_arrive(bar)
""", """        if i == 1:
            cute.arch.mbarrier_arrive(bar)
        if mA[i] > 0:
            continue
        tile[lane] = 2.0
""")
    assert moved != BODY
    src = kernel_source(moved)
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    [kr] = fr.kernels
    # The consumer is never stuck; the store after the continue races with its read.
    assert not any(f.code == "CS101" for f in kr.findings)
    assert [f.code for f in kr.findings] == ["CS201"]
