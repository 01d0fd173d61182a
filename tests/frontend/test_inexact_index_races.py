"""A race found only through accesses whose element index did not fold is a possible race.

`red[rpc * wn + rit * wn + j]` with `rpc`, `wn` unknown is taken as the whole buffer, so the model
can find two warps touching `red` when on the GPU they touch different elements (cudnn's
LayerNorm writes its variance partials and reads its mean partials in two halves of one
buffer). Such a race makes the verdict inconclusive, with the lines named, never a
counterexample; a race through exact indices stays a counterexample.
"""
from pathlib import Path

from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

BODY = """\
smem = cutlass.utils.SmemAllocator()
red = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
half = mA.shape[0]
red[half + warp] = 1.0
cute.arch.sync_threads()
x = red[half + 1 - warp]
red[warp] = x
"""


def check(body):
    src = kernel_source(body)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


def test_a_race_through_unknown_indices_is_possible_not_a_counterexample(require_spin):
    src, k = check(BODY)
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "element index is not known" in k.reason and "not told apart by element" in k.findings[0].message
    assert f"line {line_of(src, 'red[half + warp] = 1.0')}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible and f.message.startswith("possible data race")


def test_the_same_kernel_with_known_disjoint_indices_is_verified(require_spin):
    # The reads (elements 32, 33) and the last writes (elements 0, 1) never meet.
    _, k = check(BODY.replace("half = mA.shape[0]", "half = 32"))
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_a_race_through_known_overlapping_indices_is_a_counterexample(require_spin):
    # Warp 0 reads element 1 while warp 1 overwrites it after the barrier.
    src, k = check(BODY.replace("half = mA.shape[0]", "half = 0"))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible


FLAG_SCOPE = (Path(__file__).parents[2] / "samples" / "gmem_flag_scope.py").read_text()
PRODUCER_STORE = "mData[tidx] = mSrc[tidx] * 2.0"


def check_producer_store(store: str):
    """gmem_flag_scope.py with its producer CTA's store written as `store` (a CTA-scope release
    that the other CTA cannot acquire, so the read of mData is stale: CS401)."""
    src = FLAG_SCOPE.replace(PRODUCER_STORE, store)
    assert src != FLAG_SCOPE
    return src, api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels[0]


def test_a_global_race_through_an_offset_that_does_not_fold_is_possible(require_spin):
    # At known per-lane indices the race is exact; at an offset read at run time (each CTA's
    # slice of a workspace, cuDNN frost's descriptor arrays) the whole tensor stands for the
    # slice, so the race may be between different elements.
    exact = api.check_source(FLAG_SCOPE, "k.py", SETTINGS, with_fixes=False).kernels[0]
    assert exact.verdict == "counterexample", exact.reason
    assert [f.code for f in exact.findings] == ["CS401"] and not exact.findings[0].possible
    moved, k = check_producer_store("base = mData.iterator + mSrc.shape[0] * 4\n"
                                    "            (base + tidx).store(mSrc[tidx] * 2.0)")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    # The sample's finding (the stale read through the CTA-scope release) is possible only.
    assert [f.code for f in k.findings] == ["CS401"] and k.findings[0].possible
    assert f"line {line_of(moved, '(base + tidx).store')}" in k.reason


def test_a_global_race_through_per_lane_pointer_offsets_is_possible(require_spin):
    # cuDNN frost's descriptor builders: `dptr = desc_base + b * QWORDS` with `b` the lane index,
    # then `(dptr + i).store(...)`. The pointer names a different element per lane, which a
    # whole-tensor region cannot tell apart: the race is possible only.
    per_lane, k = check_producer_store("dptr = mData.iterator + tidx * 4\n"
                                       "            (dptr + 1).store(mSrc[tidx] * 2.0)")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS401"] and k.findings[0].possible
    assert f"line {line_of(per_lane, '(dptr + 1).store')}" in k.reason


def test_a_loop_from_the_lane_index_gives_each_lane_its_own_trips(require_spin):
    # frost's `for b in cutlass.range(lane, n_batch, 32)`: trip i is `lane + 32 * i` in each
    # lane, not `32 * i` in all of them (which named one known element, a definite race).
    _, k = check_producer_store("for b in cutlass.range(tidx % 32, mSrc.shape[0], 32, unroll=1):\n"
                                "                (mData.iterator + b * 4).store(mSrc[tidx] * 2.0)")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert not any("starts at 0" in a for a in k.assumptions)


TILES = """\
smem = cutlass.utils.SmemAllocator()
stage = smem.allocate_tensor(cutlass.Float32, cute.make_layout((64, 8), stride=(1, 64)))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    mine = cute.local_tile(stage, (32, 8), (0, 0))
    mine[0] = 1.0
if warp == 1:
    other = cute.local_tile(stage, (32, 8), (1, 0))
    mA[0] = other[0]
"""


def test_accesses_to_two_constant_tiles_of_one_buffer_are_a_possible_race(require_spin):
    # cuDNN's indexer backward: each warp group stages into its own half through
    # `local_tile(sdK_staging, (64, I), (compute_wg_idx, 0))`. The model keeps one region for the
    # buffer, so the race it finds between the halves is possible, never a counterexample.
    src, k = check(TILES)
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.possible and f.code == "CS201"
    assert f"line {line_of(src, 'mine[0] = 1.0')}" in k.reason


def test_accesses_to_one_constant_tile_from_two_warps_stay_a_counterexample(require_spin):
    _, k = check(TILES.replace("(1, 0))", "(0, 0))"))
    assert k.verdict == "counterexample", (k.verdict, k.reason)


COLUMN_MAJOR = """\
smem = cutlass.utils.SmemAllocator()
info = smem.allocate_tensor(cutlass.Int32, cute.make_layout((4, 2), stride=(1, 4)))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    info[(0, 1)] = 5
if warp == 1:
    mA[0] = info[(0, 0)]
"""


def test_explicit_default_strides_keep_coordinates_apart(require_spin):
    # cuDNN's MoE tile-info ring: `make_layout((4, stages), stride=(1, 4))` is the default
    # column-major layout written out, so `info[(k, stage)]` of two stages are different elements
    # (it was taken as not compact: the whole buffer, and a write of the next stage raced with a
    # read of this one).
    _, k = check(COLUMN_MAJOR)
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_the_same_coordinates_through_explicit_default_strides_still_race(require_spin):
    _, k = check(COLUMN_MAJOR.replace("info[(0, 1)] = 5", "info[(0, 0)] = 5"))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
