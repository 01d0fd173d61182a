"""Accesses through a pointer a per-lane offset into a buffer (P16), and raw arrays read at an offset.

cuDNN's SM107 MXFP8 attention backward keeps its softmax statistics in one flat array of two
slots and writes them at `sStats_raw.subview(slot_base + OFF + col)`: `col` is the lane's column
and `slot_base` a runtime slot. Where such an access lands is not known, not even its slot, so a
race through it is a possible one (inconclusive), never a counterexample; per-lane offsets that
all fold keep the access as it was (the whole buffer, as a definite access), or, in an array
declared as stages, the one stage they all fall in. Its readers load vectors with
`sStats_raw.load(stats_base + OFF, vector_size=4)`: at that offset, not the whole array.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

BODY = """\
buf = cutlass.Array(cutlass.Float32, 64, space=cutlass.AddressSpace.smem)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
slot = OFFSET
if warp_idx == 0:
    buf.subview(slot + lane).store(cutlass.Float32(1.0))
else:
    x = buf.load(READ + lane)
"""


def check(offset: str, read: str = "cutlass.Int32(32)"):
    src = kernel_source(BODY.replace("OFFSET", offset).replace("READ", read))
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    return src, k


def test_a_store_at_a_runtime_slot_plus_the_lane_is_a_possible_race_only(require_spin):
    src, k = check("mA[0] * 32")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "element index is not known" in k.reason
    assert f"line {line_of(src, 'buf.subview(slot + lane)')}" in k.reason
    assert all(f.code == "CS201" and f.possible for f in k.findings)


def test_a_store_at_known_per_lane_offsets_read_by_another_warp_is_a_counterexample(require_spin):
    _, k = check("0", read="cutlass.Int32(0)")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible


# The same slab as a two-slot ring: a producer warp fills slot `st.index` at per-lane offsets,
# a consumer warp reads it back; each slot's accesses stay in that slot.
RING = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
arr = cutlass.Array(cutlass.Float32, 2 * 64, space=cutlass.AddressSpace.smem)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
pipe = pipeline.PipelineAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
)
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    for k in cutlass.range(mA.shape[0]):
        pipe.producer_acquire(st)
        arr.subview(st.index * 64 + lane).store(cutlass.Float32(1.0))
        arr.subview(st.index * 64 + lane + 32).store(cutlass.Float32(2.0))
        pipe.producer_commit(st)
        st.advance()
elif warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    for k in cutlass.range(mA.shape[0]):
        pipe.consumer_wait(st)
        x = arr.load(st.index * 64 + lane)
        pipe.consumer_release(WHICH)
        st.advance()
"""


def test_per_lane_offsets_into_one_slot_of_a_staged_slab_stay_in_that_slot(require_spin):
    src = kernel_source(RING.replace("WHICH", "st"))
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])


def test_a_slot_read_after_its_release_is_still_a_race(require_spin):
    early = RING.replace("        x = arr.load(st.index * 64 + lane)\n        pipe.consumer_release(WHICH)\n",
                         "        pipe.consumer_release(st)\n        x = arr.load(st.index * 64 + lane)\n")
    assert early != RING
    src = kernel_source(early)
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [(f.code, f.span.line) for f in k.findings] == [("CS201", line_of(src, "arr.subview(st.index * 64 + lane)"))]



def test_a_runtime_per_lane_offset_from_a_stage_pointer_stays_in_that_stage(require_spin):
    # frost's P tile: `sP[sub_tile].base.subview(row * 128 ^ swizzle)`, the row the lane's. The
    # store stays in the slot, so reading the slot after releasing it is a definite race.
    stage_store = ("arr.subview(st.index * 64 + lane).store", "arr.subview(st.index * 64).subview(mA[0] + lane).store")
    early = RING.replace(*stage_store) \
        .replace("        x = arr.load(st.index * 64 + lane)\n        pipe.consumer_release(WHICH)\n",
                 "        pipe.consumer_release(st)\n        x = arr.load(st.index * 64 + lane)\n")
    src = kernel_source(early)
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible
    ok = kernel_source(RING.replace(*stage_store).replace("WHICH", "st"))
    (k,) = api.check_source(ok, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])
