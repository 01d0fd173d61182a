"""Each cutlass.pipeline class lowers to the mbarrier operations it performs underneath."""
import pytest

from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source

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


def test_unknown_stage_count_is_unmodeled_not_guessed():
    src = kernel_source("""\
pipe = pipeline.PipelineAsync.create(num_stages=self.stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread))
""")
    m = build_models(src, "k.py", Settings())[0]
    assert [u.construct for u in m.unmodeled] == ["PipelineAsync.create"]
