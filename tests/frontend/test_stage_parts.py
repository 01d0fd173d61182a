"""Copies into different constant parts of one stage (policy P16).

cudnn's block-sparse attention backward fills the two halves of a dO stage,
`sdO[None, 0, None, s]` and `sdO[None, 1, None, s]`, with two TMA loads under one expect_tx. A
stage is one region in the model, so the second load seems to overwrite the first; the halves
are disjoint on the GPU. Such a race is possible only (inconclusive), while two loads into the
same half still overwrite each other (a counterexample).
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


def check(views: str):
    src = kernel_source(HALVES.replace("{views}", views), threads=64,
                        init="self.num_stages = 2\nself.tile_bytes = 2 * 64 * 64 * 2\n")
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_loads_into_the_two_halves_of_a_stage_are_not_a_counterexample(require_spin):
    src, k = check(COORDS.format(other=1))
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, 'mA[None, k + 1], sA_1')}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible


def test_two_loads_into_the_same_half_overwrite_each_other(require_spin):
    src, k = check(COORDS.format(other=0))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible and f.span.line == line_of(src, "mA[None, k + 1], sA_1")


def test_loads_at_different_constant_offsets_are_not_a_counterexample(require_spin):
    _, k = check(OFFSETS.format(other=4096))
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert k.findings[0].possible


def test_loads_at_the_same_constant_offset_overwrite_each_other(require_spin):
    _, k = check(OFFSETS.format(other=0))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
