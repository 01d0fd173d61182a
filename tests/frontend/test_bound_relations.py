"""Comparisons decided by a runtime loop bound's value (P9): in a trip-count configuration the
bound `n = end - start` of `for rev in range(n)` has its value, so a comparison of the terms it is
made of (`end - 1 - rev >= start + 1`, every chunk but the last) has one answer, on every work
item the loop is run for (frost's reverse chunk loops over a persistent tile's work item)."""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

RING = """\
smem = cutlass.utils.SmemAllocator()
full = smem.allocate_array(cutlass.Int64, num_elems=2)
empty = smem.allocate_array(cutlass.Int64, num_elems=2)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    with cute.arch.elect_one():
        for i in cutlass.range_constexpr(2):
            cute.arch.mbarrier_init(full + i, 1)
            cute.arch.mbarrier_init(empty + i, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
idx = 0
phase = 0
for t in cutlass.range_constexpr(2):  # two work items, each read from the tile table
    start = mA[t, 0]
    end = mA[t, 1]
    n = end - start
    for rev in cutlass.range(n):
        if warp == 0:
            if end - 1 - rev >= start + 1:
                cute.arch.mbarrier_wait(empty + idx, phase ^ 1)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(full + idx)
        elif CONSUMES:
            cute.arch.mbarrier_wait(full + idx, phase)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(empty + idx)
        if end - 1 - rev >= start + 1:
            idx += 1
            if idx == 2:
                idx = 0
                phase ^= 1
"""


def source(consumes: str) -> str:
    return kernel_source(RING.replace("CONSUMES", consumes))


def check(src: str):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_every_chunk_but_the_last_is_known_on_each_work_item(require_spin):
    # The consumer spells the same chunks as `rev < n - 1`; the stage index advanced under the
    # producer's spelling stays a number on both work items.
    src = source("rev < n - 1")
    assert not build_models(src, "k.py", Settings())[0].unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_consuming_the_last_chunk_too_deadlocks(require_spin):
    src = source("rev < n")
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    deadlock = next(f for f in r.findings if f.code == "CS101")
    assert deadlock.span.line == line_of(src, "mbarrier_wait(full + idx")


COUNTDOWN = """\
smem = cutlass.utils.SmemAllocator()
full = smem.allocate_array(cutlass.Int64, num_elems=1)
empty = smem.allocate_array(cutlass.Int64, num_elems=1)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(full, 1)
        cute.arch.mbarrier_init(empty, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
n = mA[0, 0]
for i in cutlass.range(n - 1, unroll=1):
    tile = n - 2 - i  # the tiles counted down from the last
    if warp == 0:
        phase = (PHASE) & 1
        cute.arch.mbarrier_wait(empty, phase ^ 1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(full)
    else:
        cute.arch.mbarrier_wait(full, i & 1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(empty)
"""


def test_a_phase_counted_from_a_runtime_count_down_is_a_number_where_the_count_cancels(require_spin):
    # cuDNN's SM120 block-sparse attention: `phase = (n - 1 - tile) & 1` with `tile = n - 2 - i`
    # is `(i + 1) & 1` on every trip, whatever n is (it was a term of n: the wait unmodeled).
    src = kernel_source(COUNTDOWN.replace("PHASE", "n - 2 - tile"))
    assert not build_models(src, "k.py", Settings())[0].unmodeled
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    bad = kernel_source(COUNTDOWN.replace("PHASE", "n - 1 - tile"))
    r = check(bad)
    assert r.verdict == "counterexample", r.reason
    assert [f.code for f in r.findings] == ["CS101"]
