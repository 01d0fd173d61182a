"""Copies into different constant parts of one stage (policy P16).

cudnn's block-sparse attention backward fills the two halves of a dO stage,
`sdO[None, 0, None, s]` and `sdO[None, 1, None, s]`, with two TMA loads under one expect_tx. A
stage is one region in the model; issued back to back by the same lanes on the same barrier, the
two loads are one load of two copies (frontend `merge_tma_batches`), so the halves do not
overwrite each other, and the verdict states that the parts are taken to be disjoint. Two loads
into the same half still overwrite each other (a counterexample), and parts selected apart from
such a batch (another access between the loads) remain a possible race only.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

HALVES = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 2, 64, self.num_stages), stride=(64, 4096, 1, 8192)),
                          byte_alignment=128)
rA = cute.make_rmem_tensor((64, 2, 64), cutlass.Float16)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
pipe = pipeline.PipelineTmaAsync.create(
    num_stages=self.num_stages,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
    tx_count=self.tile_bytes,
    barrier_storage=bars,
)
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_stages)
    for k in cutlass.range(mA.shape[0]):
        pipe.producer_acquire(st)
        {views}
        cute.copy(tma_atom, mA[None, k], sA_0, tma_bar_ptr=pipe.producer_get_barrier(st))
        cute.copy(tma_atom, mA[None, k + 1], sA_1, tma_bar_ptr=pipe.producer_get_barrier(st))
        st.advance()
elif warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_stages)
    for k in cutlass.range(mA.shape[0]):
        pipe.consumer_wait(st)
        cute.autovec_copy(sA[None, None, None, st.index], rA)
        pipe.consumer_release(st)
        st.advance()
"""
COORDS = "sA_0 = sA[None, 0, None, st.index]\n        sA_1 = sA[None, {other}, None, st.index]"
# The paired variant's form: views made at constant pointer offsets into the stage.
OFFSETS = ("sA_0 = cute.make_tensor(sA[None, None, None, st.index].iterator + 0, cute.make_layout((64, 64)))\n"
           "        sA_1 = cute.make_tensor(sA[None, None, None, st.index].iterator + {other}, cute.make_layout((64, 64)))")


def check(views: str, between: str = "", stages: int = 2):
    body = HALVES.replace("{views}", views).replace("cute.copy(tma_atom, mA[None, k + 1]",
                                                    between + "cute.copy(tma_atom, mA[None, k + 1]")
    src = kernel_source(body, threads=64,
                        init=f"self.num_stages = {stages}\nself.tile_bytes = 2 * 64 * 64 * 2\n")
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_loads_into_the_two_halves_of_a_stage_are_one_load_of_two_copies(require_spin):
    src, k = check(COORDS.format(other=1))
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])
    line = line_of(src, "mA[None, k], sA_0")
    assert f"TMA loads issued back to back on sA (line {line}) into different parts of it write disjoint parts " \
        "(where each starts is known, not its extent)" in k.assumptions, k.assumptions


def test_halves_loaded_apart_are_a_possible_race_only(require_spin):
    # A fence between the two copies ends the batch: the loads stay apart.
    src, k = check(COORDS.format(other=1), between="cute.arch.fence_view_async_shared()\n        ")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, 'mA[None, k + 1], sA_1')}" in k.reason
    assert any(f.code == "CS201" and f.possible for f in k.findings)


def test_two_loads_into_the_same_half_overwrite_each_other(require_spin):
    src, k = check(COORDS.format(other=0))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible and f.span.line == line_of(src, "mA[None, k + 1], sA_1")


def test_loads_at_different_constant_offsets_are_one_load_of_two_copies(require_spin):
    _, k = check(OFFSETS.format(other=4096))
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])


def test_loads_at_the_same_constant_offset_overwrite_each_other(require_spin):
    _, k = check(OFFSETS.format(other=0))
    assert k.verdict == "counterexample", (k.verdict, k.reason)


# cuDNN's paired block-sparse backward (`load_pair`) fills a one-stage buffer with copies into views
# at constant offsets from the whole buffer's start, which the consumer reads a stage at a time:
# each copy then also writes the stage it lies in (split_stages), named at the copy's own offset.
WHOLE_BUFFER_OFFSETS = (
    "sA_0 = cute.make_tensor(sA.iterator + 0 * 4096, cute.make_layout((64, 64), stride=(64, 1)))\n"
    "        sA_1 = cute.make_tensor(sA.iterator + {other} * 4096, cute.make_layout((64, 64), stride=(64, 1)))")


def test_loads_at_offsets_from_a_buffer_read_a_stage_at_a_time_are_one_load(require_spin):
    src, k = check(WHOLE_BUFFER_OFFSETS.format(other=1), stages=1)
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])
    line = line_of(src, "mA[None, k], sA_0")
    assert f"TMA loads issued back to back on sA (line {line}) into different parts of it write disjoint parts " \
        "(where each starts is known, not its extent)" in k.assumptions, k.assumptions


def test_loads_at_the_same_offset_from_a_buffer_overwrite_each_other(require_spin):
    src, k = check(WHOLE_BUFFER_OFFSETS.format(other=0), stages=1)
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible and f.span.line == line_of(src, "mA[None, k + 1], sA_1")
