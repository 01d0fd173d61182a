"""Each cutlass.pipeline class lowers to the mbarrier operations it performs underneath."""
import textwrap

import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
pipe = pipeline.{cls}.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.{pagent}),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 2),
    barrier_storage=bars,{extra}
)
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    pipe.producer_acquire(st)
    pipe.producer_commit(st)
    st.advance()
    pipe.producer_acquire(st)
else:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    pipe.consumer_wait(st)
    pipe.consumer_release(st)
"""


def lowered(cls, pagent="Thread", extra=""):
    src = kernel_source(BODY.format(cls=cls, pagent=pagent, extra=extra))
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    return {p.warp: p.variants[0] for p in m.processes}


def summary(ops):
    out = []
    for o in ops:
        if isinstance(o, ir.MbInit):
            out.append(("init", o.bar.name.split(" ")[0], o.count))
        elif isinstance(o, ir.MbWait):
            out.append(("wait", o.bar.name.split(" ")[0], o.parity))
        elif isinstance(o, ir.MbArrive):
            out.append(("arrive", o.bar.name.split(" ")[0], o.count, o.tx))
        elif isinstance(o, ir.NamedBarrier):
            out.append(("sync",))
    return out


INIT = [("init", "pipe.full", 1), ("init", "pipe.empty[0]", 2), ("init", "pipe.full[1]", 1),
        ("init", "pipe.empty[1]", 2), ("sync",)]


def test_pipeline_async_every_thread_arrives():
    ops = lowered("PipelineAsync")
    assert summary(ops[0]) == INIT + [
        ("wait", "pipe.empty[0]", 1), ("arrive", "pipe.full", 32, 0), ("wait", "pipe.empty[1]", 1)]
    assert summary(ops[1]) == [("sync",), ("wait", "pipe.full", 0), ("arrive", "pipe.empty[0]", 32, 0)]


def test_pipeline_tma_async_arms_tx_on_acquire_and_signals_once_per_warp():
    ops = lowered("PipelineTmaAsync", extra="\n    tx_count=4096,")
    assert summary(ops[0]) == INIT + [
        ("wait", "pipe.empty[0]", 1), ("arrive", "pipe.full", 1, 4096),  # commit is a no-op
        ("wait", "pipe.empty[1]", 1), ("arrive", "pipe.full[1]", 1, 4096)]
    assert summary(ops[1]) == [("sync",), ("wait", "pipe.full", 0), ("arrive", "pipe.empty[0]", 1, 0)]


def test_pipeline_tma_umma_releases_with_one_commit_per_warp():
    ops = lowered("PipelineTmaUmma", extra="\n    tx_count=64,")
    assert summary(ops[1])[-1] == ("arrive", "pipe.empty[0]", 1, 0)
    assert ("arrive", "pipe.full", 1, 64) in summary(ops[0])


@pytest.mark.parametrize("cls", ["PipelineTmaUmma", "PipelineTmaAsync"])
def test_multicast_signaling_counts_one_signal_per_consumer_warp(cls):
    # `enable_multicast_signaling=True` replaces the consumer count with one signal per consumer
    # warp per multicast partner: a warp group of consumers (`Agent.Warp`) in a 1-CTA cluster is
    # one arrival, what the one elected commit / lane-0 signal gives (cutlass's LDMC x STMC
    # all-reduce GEMM; counted as 32 the empty barrier never completes).
    body = BODY.format(cls=cls, pagent="Thread", extra="\n    tx_count=64,\n    enable_multicast_signaling=True,")
    body = body.replace("pipeline.CooperativeGroup(pipeline.Agent.Thread, 2)", "pipeline.CooperativeGroup(pipeline.Agent.Warp)")
    m = build_models(kernel_source(body), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    ops = {p.warp: p.variants[0] for p in m.processes}
    assert ("init", "pipe.empty[0]", 1) in summary(ops[0])
    assert summary(ops[1])[-1] == ("arrive", "pipe.empty[0]", 1, 0)
    # Without the flag the library keeps the group's 32 threads.
    plain = build_models(kernel_source(body.replace("enable_multicast_signaling=True", "defer_sync=False")),
                         "k.py", Settings())[0]
    assert ("init", "pipe.empty[0]", 32) in summary(plain.processes[0].variants[0])


def test_pipeline_umma_async_commits_once_and_releases_per_thread():
    ops = lowered("PipelineUmmaAsync")
    assert ("arrive", "pipe.full", 1, 0) in summary(ops[0])
    assert summary(ops[1])[-1] == ("arrive", "pipe.empty[0]", 32, 0)


def test_pipeline_async_umma_and_cp_async():
    assert summary(lowered("PipelineAsyncUmma")[1])[-1] == ("arrive", "pipe.empty[0]", 1, 0)
    assert ("arrive", "pipe.full", 32, 0) in summary(lowered("PipelineCpAsync")[0])


def test_warp_agent_group_counts_32_per_warp():
    ops = lowered("PipelineAsync", pagent="Warp")
    assert ("init", "pipe.full", 32) in summary(ops[0])


def test_defer_sync_skips_the_create_barrier():
    ops = lowered("PipelineAsync", extra="\n    defer_sync=True,")
    assert ("sync",) not in summary(ops[1])


def test_producer_tail_waits_on_every_stage():
    src = kernel_source(BODY.format(cls="PipelineAsync", pagent="Thread", extra="")
                        .replace("    pipe.producer_acquire(st)\nelse:", "    pipe.producer_tail(st)\nelse:"))
    m = build_models(src, "k.py", Settings())[0]
    waits = [o for o in m.processes[0].variants[0] if isinstance(o, ir.MbWait)]
    # acquire(0), acquire(1) after advance, then the tail: empty[1] then empty[0] (wrapped, phase 0)
    assert [(w.bar.name.split(" ")[0], w.parity) for w in waits][-2:] == [("pipe.empty[1]", 1), ("pipe.empty[0]", 0)]


def test_tma_store_pipeline_is_bulk_groups():
    src = kernel_source("""\
c_pipe = pipeline.PipelineTmaStore.create(num_stages=3, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 64))
c_pipe.producer_commit()
c_pipe.producer_acquire()
c_pipe.producer_tail()
""")
    m = build_models(src, "k.py", Settings())[0]
    ops = m.processes[0].variants[0]
    assert [type(o).__name__ for o in ops] == ["BulkCommit", "BulkWait", "BulkWait"]
    assert [(o.pending, o.read_only) for o in ops[1:]] == [(2, True), (0, True)]


def test_handles_freeze_the_stage_they_were_acquired_for():
    src = kernel_source("""\
bars = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_elems=4)
producer, consumer = pipeline.PipelineAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
).make_participants()
if cute.arch.warp_idx() == 0:
    h = producer.acquire_and_advance()
    h.commit()
    h2 = producer.acquire_and_advance()
    h2.commit()
""")
    m = build_models(src, "k.py", Settings())[0]
    arrives = [o.bar.name.split(" ")[0] for o in m.processes[0].variants[0] if isinstance(o, ir.MbArrive)]
    assert arrives == ["pipeline.full", "pipeline.full[1]"]


CLONED_RELEASER = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 2)))
lane = cute.arch.lane_idx()
producer, consumer = pipeline.PipelineAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
).make_participants()
if cute.arch.warp_idx() == 0:
    for i in cutlass.range(3):
        h = producer.acquire_and_advance()
        sBuf[lane, h.index] = 1.0
        h.commit()
    producer.tail()
if cute.arch.warp_idx() == 1:
    releaser = consumer.clone()
    for i in cutlass.range(3):
        h = consumer.wait_and_advance()
        mA[lane] = sBuf[lane, h.index]
        RELEASE
"""


def test_a_cloned_consumer_releases_the_stages_the_original_waited_for(require_spin):
    # flash-attn's hd256 backward: `load_q_releaser = load_q_consumer.clone()` releases each
    # stage (then advances) after the original waited on it.
    from cutespin import api
    src = kernel_source(CLONED_RELEASER.replace("RELEASE", "releaser.release()\n        releaser.advance()"))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason, kr.unmodeled)
    # A releaser that never advances releases stage 0 each time: stage 1 is never freed.
    stuck = api.check_source(kernel_source(CLONED_RELEASER.replace("RELEASE", "releaser.release()")), "k.py",
                             Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert stuck.verdict == "counterexample" and [f.code for f in stuck.findings] == ["CS101"], stuck.reason


def test_unknown_stage_count_is_unmodeled_not_guessed():
    src = kernel_source("""\
pipe = pipeline.PipelineAsync.create(num_stages=cute.size(mA, mode=[0]), producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread))
""")
    m = build_models(src, "k.py", Settings())[0]
    assert [u.construct for u in m.unmodeled] == ["PipelineAsync.create"]


CLC_BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
pipe = pipeline.PipelineClcFetchAsync.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 64),
    tx_count=16,
    barrier_storage=bars,
)
sched = cutlass.utils.ClcDynamicPersistentTileScheduler.create(mA, cute.arch.block_idx(), cute.arch.grid_dim(), mA)
cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
if warp_idx == 0:
    pst = pipeline.make_pipeline_state(pipeline.PipelineUserType.ProducerConsumer, 1)
    pipe.producer_acquire(pst)
    sched.advance_to_next_work(pipe.producer_get_barrier(pst))
pipe.consumer_wait(cst)
pipe.consumer_release(cst)
"""


def test_clc_fetch_async_arms_the_response_bytes_and_releases_on_cta0():
    m = build_models(kernel_source(CLC_BODY), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    ops = {p.warp: p.variants[0] for p in m.processes}
    assert summary(ops[0])[3:] == [
        ("wait", "pipe.empty[0]", 1), ("arrive", "pipe.full", 1, 16),  # lane 0 (< cluster size) arms
        ("wait", "pipe.full", 0), ("arrive", "pipe.empty[0]", 32, 0)]  # every thread releases
    query = [o for o in ops[0] if isinstance(o, ir.TmaLoad)]
    assert len(query) == 1 and query[0].tx == 16 and query[0].bar.name.startswith("pipe.full")
    assert summary(ops[1]) == [("sync",), ("wait", "pipe.full", 0), ("arrive", "pipe.empty[0]", 32, 0)]


def test_clc_fetch_async_in_a_cluster_multicasts_the_response_and_releases_remotely():
    m = build_models(kernel_source(CLC_BODY, cluster="(2, 1, 1)"), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    cta1_w1 = next(p for p in m.processes if p.cta == 1 and p.warp == 1).variants[0]
    release = [o for o in cta1_w1 if isinstance(o, ir.MbArrive)]
    assert [(o.bar.cta, o.remote) for o in release] == [(0, True)]  # CTA 0's empty barrier
    cta0_w0 = next(p for p in m.processes if p.cta == 0 and p.warp == 0).variants[0]
    assert sorted(o.bar.cta for o in cta0_w0 if isinstance(o, ir.TmaLoad)) == [0, 1]
    armed = [o for o in cta0_w0 if isinstance(o, ir.MbArrive) and o.tx]
    assert sorted(o.bar.cta for o in armed) == [0, 1]  # lanes 0 and 1 arm CTA 0 and CTA 1


def test_clc_producer_commit_is_reported_not_guessed():
    src = kernel_source(CLC_BODY.replace("sched.advance_to_next_work(pipe.producer_get_barrier(pst))",
                                         "pipe.producer_commit(pst)"))
    m = build_models(src, "k.py", Settings())[0]
    assert [u.construct for u in m.unmodeled] == ["PipelineClcFetchAsync.producer_commit"]


def _counts(src):
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    return m, [o.count for o in m.processes[0].variants[0] if isinstance(o, ir.MbInit)]


def test_groups_through_functools_partial_warp_size_and_starred_tuples():
    src = kernel_source("""\
G = partial(pipeline.CooperativeGroup, pipeline.Agent.Thread)
pipe = pipeline.PipelineAsync.create(num_stages=1,
    producer_group=G(cute.arch.WARP_SIZE * len(self.load_warps)),
    consumer_group=G(32 * len((self.sched_warp, *self.load_warps))))
""", init="self.load_warps = (0, 1)\nself.sched_warp = 2")
    src = src.replace("import cutlass\n", "import cutlass\nfrom functools import partial\n", 1)
    assert _counts(src)[1] == [64, 96]


def test_cluster_shape_argument_is_the_pinned_shape_or_one_cta():
    body = """\
layout = cute.tiled_divide(cute.make_layout((*self.cluster_shape_mn, 1)), (self.thr_id.shape,))
peers = cute.size(layout.shape[1]) + cute.size(layout.shape[2]) - 1
pipe = pipeline.PipelineAsync.create(num_stages=self.num_ab_stage,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, peers))
"""
    init = "self.cluster_shape_mn = cluster_shape_mn\nself.num_acc_stage, self.num_ab_stage = self._stages(cluster_shape_mn)"
    extra = "def _stages(self, c):\n    return 1, 3\n"
    src = kernel_source(body, init=init, extra_class=extra).replace(
        "def __init__(self):", "def __init__(self, cluster_shape_mn):")
    m, counts = _counts(src)
    assert counts == [1, 1, 1, 1, 1, 1]  # 3 stages folded from the unpacked call; 1 multicast peer
    assert any("cluster_shape_mn not known: assumed (1, 1)" in a for a in m.assumptions)
    # An unpacked stage count that does not fold gets the default like any other stage count.
    src2 = src.replace("return 1, 3", "return 1, runtime_value()")
    m2, counts2 = _counts(src2)
    assert len(counts2) == 4 and any("self.num_ab_stage" in a for a in m2.assumptions)
    # With the cluster pinned to 2 CTAs the argument takes that shape; the multi-CTA layout
    # algebra is not folded, so the count is derived from the arrivals, and the assumption says
    # which count it could not compute.
    src3 = src.replace("    @cute.kernel", "    # cutespin: cluster=(2,1)\n    @cute.kernel")
    m3 = build_models(src3, "k.py", Settings())[0]
    assert not m3.unmodeled
    derived = [a for a in m3.assumptions if "arrival count of consumer_group" in a]
    assert len(derived) == 1 and "layout" in derived[0]


UMMA_CLUSTER_BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
layout = cute.make_layout({vmnk})
pipe = pipeline.PipelineTmaUmma.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 3),
    tx_count=64,
    barrier_storage=bars,
    cta_layout_vmnk=layout,
)
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
    pipe.consumer_wait(st)
    pipe.consumer_release(st)
"""


def test_tma_umma_release_commits_to_every_cta_in_the_row_and_column():
    # Cluster 2 x 2: CTA 3 = (m 1, n 1) is reached by the A multicast of its row (CTA 2) and the
    # B multicast of its column (CTA 1): its one commit arrives on CTAs 1, 2 and 3.
    m = build_models(kernel_source(UMMA_CLUSTER_BODY.format(vmnk="(1, 2, 2, 1)"), cluster="(2, 2, 1)"), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    w1 = next(p for p in m.processes if p.cta == 3 and p.warp == 1).variants[0]
    release = [o for o in w1 if isinstance(o, ir.MbArrive)]
    assert sorted(o.bar.cta for o in release) == [1, 2, 3]
    assert all(o.count == 1 for o in release)  # one elected lane per commit


PAIR_BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
buf = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64), stride=(64, 1)), byte_alignment=128)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
layout = cute.tiled_divide(cute.make_layout({cluster}), (tiled_mma.thr_id,))
ab = pipeline.PipelineTmaUmma.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
    tx_count=64,
    barrier_storage=bars,
    cta_layout_vmnk=layout,
)
acc = pipeline.PipelineUmmaAsync.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cute.size(layout, mode=[0]) * 64),
    barrier_storage=bars + 2,
    cta_layout_vmnk=layout,
)
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
    ab.producer_acquire(st)
    cute.copy(tma_atom, mA, buf, tma_bar_ptr=ab.producer_get_barrier(st))
    if cute.arch.block_idx()[0] % 2 == 0:
        cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        ab.consumer_wait(cst)
        ab.consumer_release(cst)
        acc.producer_commit(st)
else:
    cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
    acc.consumer_wait(cst)
    acc.consumer_release(cst)
"""
PAIR_HOST = """\
op = cute.nvgpu.tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (256, 128, 16), cute.nvgpu.tcgen05.CtaGroup.TWO,
                                     cute.nvgpu.tcgen05.OperandSource.SMEM, cute.nvgpu.tcgen05.OperandMajorMode.K,
                                     cute.nvgpu.tcgen05.OperandMajorMode.K)
tiled_mma = cute.make_tiled_mma(op)
tma_op = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(cute.nvgpu.tcgen05.CtaGroup.TWO)
tma_atom, tma_tensor = cute.nvgpu.make_tiled_tma_atom_A(tma_op, a, None, (256, 128, 64), tiled_mma, (2, 1, 1, 1))
"""


def _pair_model(cluster="(2, 1, 1)"):
    src = f"""\
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


@cute.kernel
def kernel(tiled_mma: cute.TiledMma, tma_atom: cute.CopyAtom, mA: cute.Tensor):
{textwrap.indent(PAIR_BODY.format(cluster=cluster), "    ")}

@cute.jit
def host(a: cute.Tensor):
{textwrap.indent(PAIR_HOST, "    ")}    kernel(tiled_mma, tma_atom, a).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster={cluster})
"""
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    return {(p.cta, p.warp): p.variants[0] for p in m.processes}


def test_two_cta_pair_leader_arms_for_both_ctas_and_tma_completes_on_the_leader():
    # The 2-CTA tiled MMA's thr_id makes cta_layout_vmnk ((2), 1, 1, 1): CTA 0 leads the pair.
    procs = _pair_model()
    leader, peer = procs[(0, 0)], procs[(1, 0)]
    arm = [o for o in leader if isinstance(o, ir.MbArrive) and o.tx]
    assert len(arm) == 1 and arm[0].bar.cta == 0
    assert not [o for o in peer if isinstance(o, ir.MbArrive) and o.tx]  # only the leader arms
    loads = [o for o in leader + peer if isinstance(o, ir.TmaLoad)]
    assert sorted(o.bar.cta for o in loads) == [0, 0]  # the peer's bytes complete on the leader
    assert [o.region.cta for o in loads if o.region is not None] in ([0, 1], [1, 0])
    assert [o.pair for o in loads] in ([True, False], [False, True])


def test_two_cta_pair_commits_reach_both_ctas_and_releases_the_leader():
    procs = _pair_model()
    leader = [o for o in procs[(0, 0)] if isinstance(o, ir.MbArrive) and not o.tx]
    # consumer_release: one commit each on both CTAs' empty barrier; producer_commit of the
    # accumulator: one commit each on both CTAs' full barrier.
    assert sorted((o.bar.name.split(" ")[0], o.bar.cta) for o in leader) == [
        ("ab.empty[0]", 0), ("ab.empty[0]", 1), ("acc.full[0]", 0), ("acc.full[0]", 1)]
    assert all(o.count == 1 for o in leader)
    # Each CTA's accumulator empty barrier counts the epilogue threads of both CTAs.
    inits = {o.bar.name.split(" ")[0]: o.count for o in procs[(1, 0)] if isinstance(o, ir.MbInit)}
    assert inits["acc.empty[0]"] == 128
    # The epilogue threads of both CTAs release on the leader's accumulator empty barrier.
    for cta in (0, 1):
        rel = [o for o in procs[(cta, 1)] if isinstance(o, ir.MbArrive)]
        assert len(rel) == 1 and rel[0].bar.cta == 0 and rel[0].count == 32
        assert rel[0].remote == (cta == 1)


def test_two_cta_layouts_are_reported_for_classes_without_pair_support():
    m = build_models(kernel_source(UMMA_CLUSTER_BODY.replace("PipelineTmaUmma", "PipelineTmaAsync")
                                   .format(vmnk="(2, 2, 1, 1)"), cluster="(4, 1, 1)"), "k.py", Settings())[0]
    create = [u for u in m.unmodeled if u.construct == "PipelineTmaAsync.create"]
    assert len(create) == 1 and "2-CTA" in create[0].why, m.unmodeled


def test_multicast_commit_and_tma_multicast_reach_every_cta_in_the_mask():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
buf = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64), stride=(64, 1)), byte_alignment=128)
layout = cute.make_layout((2, 1, 1))
mask = cute.make_layout_image_mask(layout, layout.get_flat_coord(cute.arch.block_idx_in_cluster()), mode=0)
cute.nvgpu.tcgen05.commit(bars, mask, cute.nvgpu.tcgen05.CtaGroup.ONE)
cute.copy(tma_atom, mA, buf, tma_bar_ptr=bars, mcast_mask=mask)
""", cluster="(2, 1, 1)")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    ops = next(p for p in m.processes if p.cta == 1 and p.warp == 0).variants[0]
    assert sorted(o.bar.cta for o in ops if isinstance(o, ir.MbArrive)) == [0, 1]
    assert sorted(o.bar.cta for o in ops if isinstance(o, ir.TmaLoad)) == [0, 1]
    assert all(o.tx == 64 * 64 * 2 for o in ops if isinstance(o, ir.TmaLoad))


def test_unknown_multicast_mask_is_reported():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
cute.nvgpu.tcgen05.commit(bars, mA.mask)
""", cluster="(2, 1, 1)")
    m = build_models(src, "k.py", Settings())[0]
    assert [u.construct for u in m.unmodeled] == ["tcgen05.commit(mask=...)"]


def test_pipeline_order_is_a_token_ring():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
order = pipeline.PipelineOrder.create(barrier_storage=bars, depth=1, length=2, group_id=warp_idx,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))
order.wait()
order.arrive()
order.wait()
""")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    ops = {p.warp: summary(p.variants[0]) for p in m.processes}
    assert ops[0] == [("init", "order.bar", 32), ("init", "order.bar[1]", 32), ("sync",),
                      ("wait", "order.bar", 1), ("arrive", "order.bar[1]", 32, 0), ("wait", "order.bar", 0)]
    assert ops[1] == [("sync",), ("wait", "order.bar[1]", 0), ("arrive", "order.bar", 32, 0),
                      ("wait", "order.bar[1]", 1)]


def test_stage_count_set_by_a_base_class_elsewhere_gets_the_default():
    src = kernel_source("""\
pipe = pipeline.PipelineAsync.create(num_stages=self.num_stages,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread))
""")
    m, counts = _counts(src)
    assert len(counts) == 4  # 2 stages x (full, empty)
    assert any("self.num_stages not foldable: assumed 2" in a for a in m.assumptions)


def test_pipeline_state_advance_is_closed_form_and_matches_single_steps():
    """A folded `state.advance(2**40)` (found by the fuzzer) must not loop; n steps equal n single steps."""
    from cutespin.frontend.pipelines import PipeState
    for stages in (1, 2, 3, 5):
        for start in range(stages):
            for n in range(0, 12):
                fast, slow = PipeState(stages, start, 1, 0), PipeState(stages, start, 1, 0)
                fast.advance(n)
                for _ in range(n):
                    slow.advance(1)
                assert (fast.index, fast.phase, fast.count) == (slow.index, slow.phase, slow.count)
    big = PipeState(3, 0, 0, 0)
    big.advance(2**40)
    assert (big.index, big.count) == (2**40 % 3, 2**40)


def test_multicast_mask_of_a_huge_layout_is_unknown_not_enumerated():
    from cutespin.frontend.values import Layout
    assert Layout((2, 1, 1 << 20)).image_mask((0, 0, 0), 0) is None
    assert Layout((2, 2, 1)).image_mask((0, 1, 0), 0) == 0b1100


def test_pipeline_state_with_no_stages_advances_without_wrapping():
    from cutespin.frontend.pipelines import PipeState
    st = PipeState(0, 0, 0, 0)
    st.advance(3)
    assert (st.index, st.phase, st.count) == (3, 0, 3)


def test_packed_float_math_is_pure_register_math():
    src = kernel_source("""\
tidx, _, _ = cute.arch.thread_idx()
x = cute.arch.mul_packed_f32x2((1.0, 2.0), (3.0, 4.0))
y = cute.arch.fma_packed_f32x2(x, x, x)
cute.arch.sync_threads()
""")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled


def test_a_barrier_array_arrive_in_a_cluster_is_reported_not_taken_as_local():
    """A package override's `self.sync_object_empty.arrive(index, self.consumer_mask)` in a 2-CTA
    cluster would target peer CTAs; taking it as a local arrive could hide a deadlock."""
    from cutespin.frontend import pipelines as P
    from cutespin.frontend.values import Smem, Unknown

    class It:
        def __init__(self):
            self.items = []

        def unmodeled(self, node, construct, why):
            self.items.append((construct, why))

    bars = Smem(alloc="bars", label="bars", cta=0)
    pipe = P.Pipeline("PipelineTmaAsync", bars, bars, 2, 128, 2, 1)
    assert isinstance(P.pipeline_attribute(pipe, "consumer_mask"), Unknown)
    it = It()
    P.mbar_method(it, P.MbarArray(pipe, "empty"), "arrive", [0, Unknown("mask")], {}, None)
    assert it.items and "cluster" in it.items[0][1]
    local = P.Pipeline("PipelineTmaAsync", bars, bars, 2, 128, 1, 1)
    assert P.pipeline_attribute(local, "consumer_mask") is None


DERIVED_BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
pipe = pipeline.PipelineTmaAsync.create(
    num_stages=self.num_stages,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.num_consumers),
    tx_count=128,
    barrier_storage=bars,
)
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((8, 8, 2)))
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    for k in cutlass.range(4):
        pipe.producer_acquire(st)
        cute.copy(atom, gA[None, k], sA[None, None, st.index], tma_bar_ptr=pipe.producer_get_barrier(st))
        st.advance()
    pipe.producer_tail(st)
else:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    for k in cutlass.range(4):
        pipe.consumer_wait(st)
        x = sA[None, None, st.index].load()
        pipe.consumer_release(st)
        st.advance(){tail}
"""


def derived_source(tail=""):
    return kernel_source(DERIVED_BODY.format(tail=tail), threads=96, params="num_consumers",
                         init="self.num_consumers = num_consumers\nself.num_stages = 2\n").replace(
        "def __init__(self):", "def __init__(self, num_consumers):")


def test_a_group_sized_at_run_time_counts_the_arrivals_the_kernel_makes():
    m = build_models(derived_source(), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    inits = {o.bar.name.split(" ")[0]: o.count for p in m.processes for v in p.variants for o in v
             if isinstance(o, ir.MbInit)}
    # Two consumer warps, each signalling from lane 0: two arrivals per phase on each empty barrier.
    assert inits == {"pipe.full": 1, "pipe.empty[0]": 2, "pipe.full[1]": 1, "pipe.empty[1]": 2}
    assert any("arrival count of consumer_group of `pipe` is not known" in a for a in m.assumptions)


def test_a_derived_count_still_checks_the_protocol(require_spin):
    from cutespin import api
    settings = Settings().with_overrides(verify_fixes=False)
    ok = api.check_source(derived_source(), "k.py", settings, with_fixes=False).kernels[0]
    assert ok.verdict == "verified", ok.reason
    assert any("taken to be the arrivals" in a for a in ok.assumptions)
    # A consumer that releases twice per wait overruns the phase whatever the count is.
    bad = derived_source("\n        pipe.consumer_release(st)")
    bad = bad.replace("        pipe.consumer_release(st)\n        st.advance()",
                      "        pipe.consumer_release(st)\n        pipe.consumer_release(st)\n        st.advance()")
    r = api.check_source(bad, "k.py", settings, with_fixes=False).kernels[0]
    assert r.verdict == "counterexample", r.reason


CONSUMER_LOOP = """\
        for k in cutlass.range(4):
            pipe.consumer_wait(st)
            x = sA[None, None, st.index].load()
            pipe.consumer_release(st)
            st.advance()
"""


def optional_consumer_source(before_warp_1: str = "", setup: str = "") -> str:
    """DERIVED_BODY whose warp 2 consumes only when its data says so; `before_warp_1` runs in
    warp 1 before its consumer loop, `setup` before the producer."""
    body = DERIVED_BODY.format(tail="").split("else:\n")[0] + (
        "else:\n"
        "    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)\n"
        "    tidx, _, _ = cute.arch.thread_idx()\n"
        "    v = mA[tidx]\n"
        "    if warp_idx == 2:\n"
        "        if v > 0:\n" + CONSUMER_LOOP.replace("\n        ", "\n            ").replace("        for", "            for", 1)
        + "    else:\n" + before_warp_1 + CONSUMER_LOOP)
    body = body.replace("if warp_idx == 0:\n    st = ", setup + "if warp_idx == 0:\n    st = ", 1)
    return kernel_source(body, threads=96, params="num_consumers",
                         init="self.num_consumers = num_consumers\nself.num_stages = 2\n").replace(
        "def __init__(self):", "def __init__(self, num_consumers):")


def test_a_deadlock_where_a_derived_count_counts_a_warp_that_may_not_arrive_is_possible(require_spin):
    # Warp 2 consumes only when its data says so (as cuDNN's MoE GEMMs' bias-load warp does in
    # builds with bias, when the budget leaves `const_expr(self.enable_bias)` unsplit). The
    # derived count has both consumer warps; in a run where warp 2 makes no arrival, the
    # producer waits for an arrival the kernel may not ask for: possible, not proven.
    src = optional_consumer_source()
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    inits = {o.bar.name.split(" ")[0]: (o.count, o.count_from_choice) for p in m.processes for v in p.variants
             for o in v if isinstance(o, ir.MbInit)}
    assert inits["pipe.empty[0]"] == (2, True) and inits["pipe.full"] == (1, False)
    k = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "arrival count does not fold" in k.reason
    (f,) = k.findings
    assert f.code == "CS101" and f.possible


def test_a_role_stuck_on_a_known_count_nobody_can_complete_is_a_counterexample(require_spin):
    # As above, but warp 1 first waits on a barrier nobody arrives on: whatever the derived
    # count, warp 1 is stuck, and the producer blocked on the derived count waits for warp 1
    # (cuDNN's Hadamard MoE GEMM: its RHT warps never release a stage, and the scheduler blocked
    # on a derived count is a consequence).
    src = optional_consumer_source("        cute.arch.mbarrier_wait(lone, 0)\n", LONE)
    k = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS101" and not f.possible
    assert any(b["line"] == line_of(src, "mbarrier_wait(lone, 0)") for b in f.data["blocked"]), f.data


LONE = """\
lone = smem.allocate_array(cutlass.Int64, num_elems=1)
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(lone, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
"""


def test_a_derived_count_whose_warps_always_arrive_is_not_marked():
    m = build_models(derived_source(), "k.py", Settings())[0]
    assert not [o for p in m.processes for v in p.variants for o in v
                if isinstance(o, ir.MbInit) and o.count_from_choice]


def test_a_raw_mbarrier_init_with_a_runtime_count_counts_the_arrivals():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, self.num_arrivals)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx > 0:
    cute.arch.mbarrier_arrive(bar)
cute.arch.mbarrier_wait(bar, 0)
""", threads=96, init="self.num_arrivals = n\n").replace("def __init__(self):", "def __init__(self, n):")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled
    inits = [o.count for p in m.processes for o in p.variants[0] if isinstance(o, ir.MbInit)]
    assert inits == [64]  # warps 1 and 2, every lane
    assert any("arrival count of this mbarrier_init is not known" in a for a in m.assumptions)


def test_barrier_array_cp_async_arrive_is_a_deferred_noinc_arrive_per_thread():
    # flash-attn-4: `pipeline_KV.sync_object_full.arrive_cp_async_mbarrier(stage)` after the
    # thread's cp.async copies: cp_async_mbarrier_arrive_noinc on that stage's full barrier.
    from ..kernels import kernel_source
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
pipe = pipeline.PipelineCpAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
)
views = []
views.append(bars)
views.append(bars)
if cute.arch.warp_idx() == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    pipe.producer_acquire(st)
    cute.arch.cp_async_commit_group()
    pipe.sync_object_full.arrive_cp_async_mbarrier(st.index + len(views) - 1)
""")
    k = build_models(src, "k.py", Settings())[0]
    assert not k.unmodeled, k.unmodeled
    ops = list(ir.walk(next(p for p in k.processes if p.warp == 0).variants[-1]))
    [arrive] = [op for op in ops if isinstance(op, ir.MbArrive)]
    assert arrive.bar.name == "pipe.full[1] (CTA 0)" and arrive.cp_async


def test_ring_lengths_chosen_on_the_host_take_the_kernel_stage_count():
    # dist-moe's RMSNorm backward: `n_smem_stages = const_expr(self._tma_stages_val if USE_TMA else 2)`
    # with the configured value unknown; the pipeline and its states take the default (stated),
    # and so does the variable, so `bidx + (n_smem_stages - 1) * gdim` is a known lookahead.
    from ..kernels import kernel_source
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=8)
n_smem_stages = cutlass.const_expr(self.tma_depth if self.use_tma else 2)
pipe = pipeline.PipelineAsync.create(
    num_stages=n_smem_stages,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
)
other = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.cfg.depth)
if cute.arch.warp_idx() == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, n_smem_stages)
    for i in cutlass.range_constexpr(3):
        pipe.producer_acquire(st)
        pipe.producer_commit(st)
        st.advance()
""", init="self.tma_depth = cfg['tma_stages']\nself.use_tma = cfg['use_tma']\nself.cfg = cfg").replace(
        "def __init__(self):", "def __init__(self, cfg):")
    k = build_models(src, "k.py", Settings())[0]
    assert not k.unmodeled, k.unmodeled
    assert any("n_smem_stages (line" in a and "assumed 2 stages" in a for a in k.assumptions)
    assert any("the stage count of make_pipeline_state is not known" in a for a in k.assumptions)
    ops = list(ir.walk(next(p for p in k.processes if p.warp == 0).variants[-1]))
    assert [(o.bar.name, o.parity) for o in ops if isinstance(o, ir.MbWait)] == [
        ("pipe.empty[0] (CTA 0)", 1), ("pipe.empty[1] (CTA 0)", 1), ("pipe.empty[0] (CTA 0)", 0)]


SYMMETRIC_MULTICAST = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
buf = smem.allocate_tensor(cutlass.Float16, cute.make_layout(mA.shape), byte_alignment=128)
rank = cute.arch.block_idx_in_cluster()
layout = cute.make_layout((2, 1, 1))
mask = cute.make_layout_image_mask(layout, layout.get_flat_coord(rank), mode=0)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bars, 1)
cute.arch.mbarrier_init_fence()
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bars, cute.size_in_bytes(cutlass.Float16, buf.layout))
        cute.copy(tma_atom, mA, buf, tma_bar_ptr=bars, mcast_mask=mask)
    cute.arch.mbarrier_wait(bars, 0)
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""


def test_multicast_of_a_tile_of_unknown_bytes_counts_one_unit_per_cta_of_the_group():
    # Each CTA multicasts its half of the tile to both: each barrier receives two copies, and
    # counted in copies each CTA's expect is its own copy times the CTAs of the group.
    m = build_models(kernel_source(SYMMETRIC_MULTICAST, cluster="(2, 1, 1)"), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    for cta in (0, 1):
        ops = list(ir.walk(next(p for p in m.processes if p.cta == cta and p.warp == 0).variants[0]))
        assert [o.tx for o in ops if isinstance(o, ir.MbArrive) and o.tx] == [2]
        assert sorted((o.bar.cta, o.tx, o.mcast) for o in ops if isinstance(o, ir.TmaLoad)) == [(0, 1, 2), (1, 1, 2)]
    assert any(a.startswith("multicast TMA: the expected bytes on bars (CTA 0) cover") for a in m.assumptions), \
        m.assumptions


def test_symmetric_multicast_of_unknown_bytes_is_verified(require_spin):
    result = api.check_source(kernel_source(SYMMETRIC_MULTICAST, cluster="(2, 1, 1)"), "k.py",
                              Settings(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "verified", result.kernels[0].reason


def test_multicast_of_unknown_bytes_that_skips_the_issuing_cta_is_unmodeled():
    # CTA r multicasts only to the other CTA: whether its own barrier is served depends on the
    # other CTA's copies, which counting per CTA cannot see.
    src = kernel_source(SYMMETRIC_MULTICAST.replace(
        "mask = cute.make_layout_image_mask(layout, layout.get_flat_coord(rank), mode=0)",
        "mask = 2 if rank == 0 else 1"), cluster="(2, 1, 1)")
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.why) for u in m.unmodeled] == \
        [("TMA multicast", "the bytes of the destination tile are not known")], m.unmodeled


PAIR_MULTICAST_BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
buf = smem.allocate_tensor(cutlass.Float16, cute.make_layout(mA.shape), byte_alignment=128)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
rank = cute.arch.block_idx_in_cluster()
layout = cute.tiled_divide(cute.make_layout((2, 2, 1)), (tiled_mma.thr_id,))
mask = cute.nvgpu.cpasync.create_tma_multicast_mask(layout, layout.get_flat_coord(rank), mcast_mode={mode})
ab = pipeline.PipelineTmaUmma.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 2),
    tx_count=cute.size_in_bytes(cutlass.Float16, buf.layout) * 4,
    barrier_storage=bars,
    cta_layout_vmnk=layout,
)
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
    ab.producer_acquire(st)
    cute.copy(tma_atom, mA, buf, tma_bar_ptr=ab.producer_get_barrier(st), mcast_mask=mask)
    if cute.arch.block_idx()[0] % 2 == 0:
        cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        ab.consumer_wait(cst)
        ab.consumer_release(cst)
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""


def _pair_multicast_source(mode: int) -> str:
    return f"""\
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


@cute.kernel
def kernel(tiled_mma: cute.TiledMma, tma_atom: cute.CopyAtom, mA: cute.Tensor):
{textwrap.indent(PAIR_MULTICAST_BODY.format(mode=mode), "    ")}

@cute.jit
def host(a: cute.Tensor):
{textwrap.indent(PAIR_HOST, "    ")}    kernel(tiled_mma, tma_atom, a).launch(grid=(4, 1, 1), block=(32, 1, 1), cluster=(2, 2, 1))
"""


def test_two_cta_multicast_of_unknown_bytes_counts_the_pair_and_the_group_on_the_leader():
    # Cluster (2, 2, 1) with 2-CTA pairs: V (the pair) x N. Each CTA multicasts its part of the
    # tile along N; the pair's two CTAs complete on the leader's barrier. Counted in copies, the
    # leader's expect is its own copy times the pair (2) times the N group (2).
    m = build_models(_pair_multicast_source(2), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    for cta in (0, 2):  # the pair leaders
        ops = list(ir.walk(next(p for p in m.processes if p.cta == cta and p.warp == 0).variants[0]))
        assert [o.tx for o in ops if isinstance(o, ir.MbArrive) and o.tx] == [4]
        own = [o for o in ops if isinstance(o, ir.TmaLoad) and o.bar.cta == cta]
        assert [(o.pair, o.mcast) for o in own] == [(True, 2)]
    for cta in (1, 3):  # the peers complete on their leaders' barriers, never their own
        loads = [o for o in ir.walk(next(p for p in m.processes if p.cta == cta and p.warp == 0).variants[0])
                 if isinstance(o, ir.TmaLoad)]
        assert sorted(o.bar.cta for o in loads) == [0, 2] and not any(o.pair for o in loads)
    assert any(a.startswith("2-CTA TMA: the pair leader's expected bytes on") for a in m.assumptions)
    assert any(a.startswith("multicast TMA: the expected bytes on") for a in m.assumptions)


def test_two_cta_multicast_of_unknown_bytes_is_verified(require_spin):
    result = api.check_source(_pair_multicast_source(2), "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "verified", result.kernels[0].reason


def test_two_cta_multicast_to_both_ctas_of_a_pair_counts_every_copy_to_the_pair_on_the_leader():
    # Multicast along V (cuDNN's MXFP8 prefill sends each CTA's half of the scale factors to the
    # pair): both destinations complete on the leader's barrier, which receives, per destination,
    # one copy from each CTA of the pair. Each of the leader's two copies counts 2 units.
    m = build_models(_pair_multicast_source(0), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    for cta in (0, 2):
        ops = list(ir.walk(next(p for p in m.processes if p.cta == cta and p.warp == 0).variants[0]))
        assert [o.tx for o in ops if isinstance(o, ir.MbArrive) and o.tx] == [4]
        own = [o for o in ops if isinstance(o, ir.TmaLoad) and o.bar.cta == cta]
        assert [(o.pair, o.mcast) for o in own] == [(False, 2), (False, 2)]
    assert any(a.startswith("multicast TMA: the expected bytes on") for a in m.assumptions)


def test_two_cta_multicast_to_both_ctas_of_a_pair_is_verified_and_a_missing_peer_copy_deadlocks(require_spin):
    result = api.check_source(_pair_multicast_source(0), "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "verified", result.kernels[0].reason
    # The peer skips its copy: the leader's barrier gets 2 of the 4 copies it expects.
    src = _pair_multicast_source(0).replace(
        "        cute.copy(tma_atom, mA, buf, tma_bar_ptr=ab.producer_get_barrier(st), mcast_mask=mask)",
        "        if rank % 2 == 0:\n"
        "            cute.copy(tma_atom, mA, buf, tma_bar_ptr=ab.producer_get_barrier(st), mcast_mask=mask)")
    assert "if rank % 2 == 0:" in src
    result = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "counterexample", result.kernels[0].reason
    assert "CS101" in [f.code for f in result.kernels[0].findings]


def test_barrier_array_arrive_of_a_clc_fetch_pipeline_is_unmodeled_not_a_crash():
    # lightmoe's grouped wgrad scheduler: a package override arriving through
    # `sync_object_empty` of a PipelineClcFetchAsync (no producer/consumer arrival style).
    from ..kernels import kernel_source
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
pipe = pipeline.PipelineClcFetchAsync.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    tx_count=16,
    barrier_storage=bars,
)
if cute.arch.warp_idx() == 0:
    pipe.sync_object_empty.arrive(0)
""")
    k = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.why) for u in k.unmodeled] == [
        ("sync_object.arrive", "an arrive through the barrier array of a PipelineClcFetchAsync")], k.unmodeled


TMA_INFO_ARGUMENT = """\
import cutlass
import cutlass.cute as cute
from cutlass import pipeline
from cutlass.pipeline import Agent, CooperativeGroup


@cute.kernel
def k(tma_k: cute.nvgpu.cpasync.TmaInfo, mK: cute.Tensor, sK: cute.Tensor):
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    smem = cutlass.utils.SmemAllocator()
    # cuDNN's QSA forward: the ring's stage count is the last mode of the atom's SMEM layout.
    k_stages = tma_k.smem_layout.shape[-1]
    k_pipe_ptr = smem.allocate_array(cutlass.Int64, k_stages * 2)
    producer, consumer = pipeline.PipelineTmaUmma.create(
        barrier_storage=k_pipe_ptr, num_stages=k_stages, producer_group=CooperativeGroup(Agent.Thread),
        consumer_group=CooperativeGroup(Agent.Thread), tx_count=128).make_participants()
    if warp_idx == 0:
        for i in cutlass.range(4):
            h = producer.acquire_and_advance()
            cute.copy(tma_k.atom, mK, sK, tma_bar_ptr=h.barrier)
    if warp_idx == 1:
        for i in cutlass.range(4):
            h = consumer.wait_and_advance()
            h.release()
"""


def test_a_tma_info_argument_is_a_tma_atom_whose_smem_layout_is_host_configuration():
    # Its `smem_layout` is built on the host: the stage count read from it takes the default
    # stage count (stated, pinnable) instead of leaving the pipeline unmodeled, and `.atom` is a
    # TMA atom completing bytes on the handle's barrier.
    m = build_models(TMA_INFO_ARGUMENT, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert any("stage count of PipelineTmaUmma.create is not known" in a and "assumed 2 stages" in a
               for a in m.assumptions)
    producer = next(p for p in m.processes if p.warp == 0)
    loads = [o for o in ir.walk(producer.variants[0]) if isinstance(o, ir.TmaLoad)]
    assert [o.bar.name for o in loads] == ["pipeline.full (CTA 0)", "pipeline.full[1] (CTA 0)"] * 2


ASYNC_UMMA_PAIR_BODY = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
layout = cute.tiled_divide(cute.make_layout((2, 1, 1)), (tiled_mma.thr_id.shape,))
p = pipeline.PipelineAsyncUmma.create(
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, cute.size(layout, mode=[0]) * 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
    barrier_storage=bars,
    cta_layout_vmnk=layout,
)
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
    p.producer_acquire(st)
    p.producer_commit(st)
elif cute.arch.block_idx()[0] % 2 == 0:
    cst = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
    p.consumer_wait(cst)
    p.consumer_release(cst)
# The leader's commit reaches the peer's shared memory: neither CTA exits before both are done.
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""


def _bar_name(op) -> str:
    """`p.empty[0] (CTA 1)` -> `p.empty` (a one-stage array is named with or without its index)."""
    return op.bar.name.split(" ")[0].split("[")[0]


def test_two_cta_async_umma_producers_arrive_on_the_leader_and_its_commit_reaches_both_ctas():
    # PipelineAsyncUmma of a pair (the softmax -> MMA P buffer of 2-CTA attention): the producer
    # threads of both CTAs arrive on the leader's full barrier; the leader's MMA warp releases
    # with one tcgen05.commit to the empty barrier of both CTAs. The tiler is `thr_id.shape`, and
    # the MMA comes from the block-scaled helper (both as cuDNN's 2-CTA attention backward).
    host = PAIR_HOST.replace("cute.make_tiled_mma(op)", "sm100_utils.make_blockscaled_trivial_tiled_mma("
                             "cutlass.Float8E4M3FN, None, None, cutlass.Float8E8M0FNU, 32, "
                             "cute.nvgpu.tcgen05.CtaGroup.TWO, (256, 128))")
    src = f"""\
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils


@cute.kernel
def kernel(tiled_mma: cute.TiledMma, tma_atom: cute.CopyAtom, mA: cute.Tensor):
{textwrap.indent(ASYNC_UMMA_PAIR_BODY, "    ")}

@cute.jit
def host(a: cute.Tensor):
{textwrap.indent(host, "    ")}    kernel(tiled_mma, tma_atom, a).launch(grid=(2, 1, 1), block=(64, 1, 1), cluster=(2, 1, 1))
"""
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    procs = {(p.cta, p.warp): p.variants[0] for p in m.processes}
    for cta in (0, 1):
        commit = [o for o in procs[(cta, 1)] if isinstance(o, ir.MbArrive)]
        assert [(_bar_name(o), o.bar.cta, o.count, o.remote) for o in commit] == [
            ("p.full", 0, 32, cta == 1)]
    release = [o for o in procs[(0, 0)] if isinstance(o, ir.MbArrive)]
    assert sorted((_bar_name(o), o.bar.cta, o.count) for o in release) == [
        ("p.empty", 0, 1), ("p.empty", 1, 1)]
    inits = {_bar_name(o): o.count for o in procs[(0, 0)] if isinstance(o, ir.MbInit)}
    assert inits == {"p.full": 64, "p.empty": 1}
    result = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "verified", result.kernels[0].reason
