"""`pipeline.MbarrierArray` built by the kernel itself, outside any pipeline.

cuDNN's block-sparse attention keeps one array per operand (`Q_barrier =
(pipeline.MbarrierArray(storage, num_stages=1, agent=(PipelineOp.TmaLoad, group)),)`), arms it with
`arrive_and_expect_tx(index=, tx_count=)`, hands `get_barrier(i)` to the TMA copy and waits with
`wait(index=, phase=)`. The constructor initialises each stage on warp 0's elected lane with the
group's count and syncs nothing (cute-sync-api.md §9.1).
"""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of


def array_kernel(phase: int = 0, op: str = "TmaLoad") -> str:
    src = kernel_source(f"""\
smem = cutlass.utils.SmemAllocator()
q_storage = smem.allocate_array(cutlass.Int64, num_elems=1)
v_storage = smem.allocate_array(cutlass.Int64, num_elems=self.v_stages)
sQ = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 32)), byte_alignment=128)
sV = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 32, self.v_stages)), byte_alignment=128)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
tidx, _, _ = cute.arch.thread_idx()
op = pipeline.PipelineOp.{op}
cg = pipeline.CooperativeGroup(pipeline.Agent.Thread)
Q_barrier = (pipeline.MbarrierArray(q_storage, num_stages=1, agent=(op, cg)),)
V_barrier = pipeline.MbarrierArray(v_storage, num_stages=self.v_stages, agent=(op, cg))
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    Q_barrier[0].arrive_and_expect_tx(index=0, tx_count=64 * 32 * 2)
    cute.copy(tma_atom, mA, sQ, tma_bar_ptr=Q_barrier[0].get_barrier(0))
    V_barrier.arrive_and_expect_tx(1, 64 * 32 * 2)
    cute.copy(tma_atom, mA, sV[None, None, 1], tma_bar_ptr=V_barrier.get_barrier(1))
Q_barrier[0].wait(index=0, phase={phase})
x = sQ[tidx]
V_barrier.wait(1, 0)
y = sV[tidx, 0, 1]
""", init="self.v_stages = 2\n")
    return src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom):")


def check(src: str):
    return api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]


def test_an_array_is_initialised_by_one_lane_of_warp_0_with_its_group_count():
    m = build_models(array_kernel(), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    inits = [op for p in m.processes for ops in p.variants for op in ir.walk(ops) if isinstance(op, ir.MbInit)]
    assert sorted((op.bar.name.split(" (")[0], op.count) for op in inits) == [
        ("Q_barrier", 1), ("V_barrier", 1), ("V_barrier[1]", 1)], inits
    loads = [op for p in m.processes for ops in p.variants for op in ir.walk(ops) if isinstance(op, ir.TmaLoad)]
    assert sorted((op.bar.name.split(" (")[0], op.tx) for op in loads) == [("Q_barrier", 4096), ("V_barrier[1]", 4096)]


def test_tma_loads_armed_and_awaited_through_arrays_are_verified(require_spin):
    r = check(array_kernel())
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_wait_on_the_phase_that_has_not_begun_returns_at_once_and_the_read_races(require_spin):
    src = array_kernel(phase=1)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS201" and f.span.line == line_of(src, "x = sQ[tidx]") for f in r.findings), \
        [(f.code, f.span.line, f.message) for f in r.findings]


def test_an_array_for_an_op_the_model_does_not_know_is_unmodeled_with_its_line():
    src = array_kernel(op="SomeFutureOp")
    m = build_models(src, "k.py", Settings())[0]
    assert ("pipeline.MbarrierArray", line_of(src, "Q_barrier = ")) in [(u.construct, u.line) for u in m.unmodeled]
