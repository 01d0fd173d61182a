"""A TMA copy issued before the expect that arms its barrier (cuDNN QSA's forward: the Q copy,
then `mbarrier_arrive_and_expect_tx(q_bar, q_bytes)`): PTX lets the transaction count go below
zero until the expect arrives, and the phase completes only when both have. With a byte count
that does not fold, the copy counts one unit into that later expect of its warp."""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

BODY = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
sQ = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64)), 128)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp == 0:
    cute.copy(tma_atom, mA, sQ, tma_bar_ptr=bar)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, self.q_bytes)
else:
    WAIT
    x = sQ.load()
"""


def _checked(body: str):
    """`body` as the kernel of a class whose `q_bytes` the host sets, with a TMA atom argument."""
    src = kernel_source(body, init="self.q_bytes = q_bytes_from_host()", params="tma_atom: cute.CopyAtom")
    src = src.replace("self.kernel(mA)", "self.kernel(mA, tma_atom)").replace(
        "def kernel(self, mA: cute.Tensor)", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom)")
    return src, api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def _check(wait: str):
    return _checked(BODY.replace("WAIT", wait))


def test_a_copy_before_its_expect_completes_the_phase_with_it(require_spin):
    _, k = _check("cute.arch.mbarrier_wait(bar, 0)")
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("match the TMA copies that complete it" in a for a in k.assumptions), k.assumptions


def test_reading_without_the_wait_still_races_with_that_copy(require_spin):
    src, k = _check("pass")
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS201"]


# cuDNN's block-sparse backward: `producer_acquire` already arms the full barrier with the
# pipeline's `tx_count`, and the producer adds more with `mbarrier_expect_tx` before its copies.
# With byte counts that do not fold, the copies count into the first of those expects: counted
# into the second alone, the acquire's arrive would complete the phase before any copy landed.
TWO_EXPECTS = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
sQ = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64, 2)), 128)
sK = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64, 2)), 128)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
pipe = pipeline.PipelineTmaAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
    tx_count=self.q_bytes,
    barrier_storage=bars,
)
if warp == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    for k in cutlass.range(mA.shape[0]):
        pipe.producer_acquire(st)
        bar = pipe.producer_get_barrier(st)
        EXTRA
        cute.copy(tma_atom, mA[None, k], sQ[None, None, st.index], tma_bar_ptr=bar)
        cute.copy(tma_atom, mA[None, k + 1], sK[None, None, st.index], tma_bar_ptr=bar)
        st.advance()
elif warp == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    for k in cutlass.range(mA.shape[0]):
        pipe.consumer_wait(st)
        x = sQ[None, None, st.index].load() + sK[None, None, st.index].load()
        pipe.consumer_release(st)
        st.advance()
"""


def _check_two_expects(extra: str):
    return _checked(TWO_EXPECTS.replace("EXTRA", extra))


def test_copies_after_two_expects_count_into_the_first(require_spin):
    _, k = _check_two_expects("with cute.arch.elect_one():\n"
                              "            cute.arch.mbarrier_expect_tx(bar, self.q_bytes)")
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])

