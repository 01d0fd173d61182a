"""A persistent loop whose tiles one warp computes and hands to the others through shared memory
(lightmoe's grouped wgrad GEMM: the scheduler warp writes each tile, then a sentinel, and ends
with `producer_tail`; the other warps loop while the tile they read is valid). The configurations
pair the two `while work.is_valid_tile` loops by their text, but the writer's loop runs one trip
fewer than the readers' (its first tile is written before the loop), so a paired count can make
the writer wait for a release of a tile nobody reads. Such a deadlock is only possible."""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source

INFO = '''
class Info:
    def __init__(self, m):
        self.m = m

    @property
    def is_valid_tile(self):
        return self.m >= 0
'''

HANDOVER = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
sInfo = smem.allocate_tensor(cutlass.Int32, cute.make_layout((4, 2)))
pipe = pipeline.PipelineAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 1:
    sched = cutlass.utils.StaticPersistentTileScheduler.create(mA, cute.arch.block_idx(), cute.arch.grid_dim())
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    work = sched.initial_work_tile_info()
    pipe.producer_acquire(st)
    sInfo[(0, st.index)] = 1
    pipe.producer_commit(st)
    st.advance()
    sched.advance_to_next_tile()
    work = sched.get_current_work()
    while work.is_valid_tile:
        pipe.producer_acquire(st)
        sInfo[(0, st.index)] = 1
        pipe.producer_commit(st)
        st.advance()
        sched.advance_to_next_tile()
        work = sched.get_current_work()
    pipe.producer_acquire(st)
    sInfo[(0, st.index)] = -1
    pipe.producer_commit(st)
    st.advance()
    pipe.producer_tail(st)
if warp_idx == 0:
    cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    pipe.consumer_wait(cst)
    work = Info(sInfo[(0, cst.index)])
    pipe.consumer_release(cst)
    cst.advance()
    while work.is_valid_tile:
        pipe.consumer_wait(cst)
        work = Info(sInfo[(0, cst.index)])
        pipe.consumer_release(cst)
        cst.advance()
"""


def source() -> str:
    src = kernel_source(HANDOVER)
    return src.replace("\n\nclass K:", "\n" + INFO + "\n\nclass K:", 1)


def test_a_loop_bound_read_from_a_handed_over_tile_is_reported_with_its_computing_twin():
    m = build_models(source(), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert [text for text, _ in m.data_bounds] == ["work.is_valid_tile"]
    assert any(a.startswith("the loop `while work.is_valid_tile` is bounded by a value some warps compute")
               for a in m.assumptions), m.assumptions


def test_a_deadlock_through_paired_handover_loops_is_only_possible(require_spin):
    k = api.check_source(source(), "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert k.reason.startswith("a possible deadlock in loops bounded by data another warp hands over")
    assert [f.code for f in k.findings] == ["CS101"] and k.findings[0].possible
