"""Counts that roles derive from one value must pair up the way a launch pairs them.

* A countdown loop (`n -= 1; while n > 0: ...; n -= 1`) runs n trips, n's value at entry: cuDNN
  HSTU's load and MMA warps issue the first tile before the loop and count down from one less
  than the compute warps, which loop over the full count. One trip count per condition text
  gave all three the same trips, a pairing no launch has (a false deadlock).
* A uniform condition computed from launch-wide values only (kernel arguments, constants) has
  one value in every CTA of the launch: the 2-CTA HSTU kernel computes its loop count from
  `bidx // 2` so that both CTAs of the pair agree. Taken per CTA, one CTA could skip its loop
  while its peer signals it (a false deadlock). A value that depends on the CTA (its rank, its
  own shared memory) stays one value per CTA.
* A stage index or phase advanced on one side of a uniform branch is a select of numbers, and
  stays one however often it is advanced after the branch.
"""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import async_pipeline, kernel_source

COUNTDOWN = async_pipeline() + """\
n = mA.shape[0]
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    pipe.producer_acquire(st)
    pipe.producer_commit(st)
    st.advance()
    PROLOGUE_COUNT
    while n > 0:
        pipe.producer_acquire(st)
        pipe.producer_commit(st)
        st.advance()
        n -= 1
    pipe.producer_tail(st)
elif warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    while n > 0:
        pipe.consumer_wait(st)
        pipe.consumer_release(st)
        st.advance()
        n -= 1
"""


def _check(body: str, **kw):
    src = kernel_source(body, **kw)
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_a_countdown_from_one_less_pairs_with_the_full_count(require_spin):
    k = _check(COUNTDOWN.replace("PROLOGUE_COUNT", "n -= 1"))
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("runs 1 trip more than that loop" in a for a in k.assumptions), k.assumptions


def test_a_loop_whose_continue_could_skip_the_count_is_no_countdown():
    # A trip that continues before `n -= 1` does not count: the loop does not run n trips.
    body = COUNTDOWN.replace("PROLOGUE_COUNT", "n -= 1").replace("""\
    while n > 0:
        pipe.consumer_wait(st)""", """\
    while n > 0:
        if mA.shape[1] > 7:
            continue
        pipe.consumer_wait(st)""")
    assert "continue" in body
    m = build_models(kernel_source(body), "k.py", Settings())[0]
    assert not any("trip more than that loop" in a for a in m.assumptions), m.assumptions


# cuDNN's DSA score recompute: the producer hands over the first tile under `if n >= 1:` and then
# counts `k = n - 3` down by two; the consumer counts `k = n - 1` down by two. Taken apart (the
# branch a free choice, each loop's trips its own), the model paired a taken-`else` branch with
# a loop trip: a false deadlock.
STEPPED = """\
n = mA.shape[0]
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    if n >= 1:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
    k = n - START
    while k >= 0:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        k = k - 2
elif warp_idx == 1:
    j = n - 1
    while j >= 0:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        j = j - 2
"""


def test_countdowns_by_two_pair_up_through_the_value_they_count(require_spin):
    k = _check(STEPPED.replace("START", "3"))
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("counts down by 2" in a for a in k.assumptions), k.assumptions


def test_a_countdown_by_two_from_one_more_deadlocks(require_spin):
    # `k = n - 2`: one handover more than the consumer takes whenever n is even.
    k = _check(STEPPED.replace("START", "2"))
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]


def test_a_producer_that_does_not_count_its_first_tile_still_deadlocks(require_spin):
    # One more tile produced than consumed: the producer's tail waits for a release that never comes.
    k = _check(COUNTDOWN.replace("PROLOGUE_COUNT", "pass"))
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]


PAIR = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
if warp == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
count = COUNT
if count > 0:
    if warp == 0:
        if rank == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=0)
        else:
            cute.arch.mbarrier_wait(bar, 0)
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""


def test_a_launch_wide_condition_is_taken_alike_by_both_ctas(require_spin):
    k = _check(PAIR.replace("COUNT", "mA.shape[0] - 1"), cluster=(2, 1, 1), grid="(2, 1, 1)")
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert k.bounds["cluster"] == 2


def test_a_condition_on_the_ctas_own_rank_may_differ_between_them(require_spin):
    # CTA 1's count is one less: with mA.shape[0] == 1 it skips the arrive CTA 0 waits for.
    k = _check(PAIR.replace("COUNT", "mA.shape[0] - rank"), cluster=(2, 1, 1), grid="(2, 1, 1)")
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]


def test_a_condition_on_a_value_from_the_ctas_own_shared_memory_may_differ_between_them(require_spin):
    # Each CTA broadcasts its own block's count through its shared memory: one value per CTA.
    body = PAIR.replace("count = COUNT", """\
sCount = smem.allocate_tensor(cutlass.Int32, cute.make_layout((1,)), 4)
tidx, _, _ = cute.arch.thread_idx()
bidx, _, _ = cute.arch.block_idx()
if tidx == 0:
    sCount[0] = mA[bidx]
cute.arch.sync_threads()
count = sCount[0]""")
    k = _check(body, cluster=(2, 1, 1), grid="(2, 1, 1)")
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]


RING_SETUP = """\
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
"""

RING = RING_SETUP + """\
idx = 0
phase = 0
if mA.shape[0] > 0:
    self.hand_over(warp, full, empty, idx, phase)
    idx, phase = self.step(idx, phase)
for i in cutlass.range_constexpr(TRIPS):
    idx, phase = self.step(idx, phase)
self.hand_over(warp, full, empty, idx, phase)
"""

RING_HELPERS = """\
@cute.jit
def hand_over(self, warp, full, empty, idx, phase):
    if warp == 0:
        cute.arch.mbarrier_wait(empty + idx, phase ^ 1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(full + idx)
    if warp == 1:
        cute.arch.mbarrier_wait(full + idx, phase)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(empty + idx)

@cute.jit
def step(self, idx, phase):
    incr = idx + 1  # a one-stage ring: the index stays 0, the phase flips
    return incr % 1, phase ^ (incr // 1)

"""


def test_a_ring_index_advanced_on_one_side_of_a_uniform_branch_stays_known_over_many_trips(require_spin):
    # After the branch the phase is a select on `mA.shape[0] > 0`; both roles then skip 120 phases
    # (an even number) before the next hand-over. Flipped arm by arm it stays a select of numbers,
    # decided in each configuration of the condition; an operation piled on the select per flip
    # would outgrow the term limit long before the wait (the parity would not be known).
    k = _check(RING.replace("TRIPS", "120"), extra_class=RING_HELPERS)
    assert not k.unmodeled, [u.why for u in k.unmodeled]
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("`mA.shape[0] > 0`" in a and "taken on each of its sides" in a for a in k.assumptions), k.assumptions


SKEW = RING_SETUP + """\
p_phase = 0
c_phase = 0
for t in cutlass.range(mA.shape[1], unroll=1):
    if mA.shape[0] > t:
        self.hand_over(warp, full, empty, 0, p_phase)
        FLIP
    self.hand_over(warp, full, empty, 0, c_phase if warp == 1 else p_phase)
    p_phase ^= 1
    c_phase ^= 1
"""


def test_a_phase_advanced_on_one_side_of_a_uniform_branch_in_a_loop_is_waited_on_per_side(require_spin):
    # Each trip's condition is a uniform value of its own: the parities after it are selects,
    # waited on inside one model (a branch on the same condition) rather than one configuration
    # per trip. Both roles' phases advance with the extra hand-over: verified.
    k = _check(SKEW.replace("FLIP", "p_phase ^= 1\n        c_phase ^= 1"), extra_class=RING_HELPERS)
    assert not k.unmodeled, [u.why for u in k.unmodeled]
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("`mA.shape[0] > t`" in a and "taken on each of its sides" in a for a in k.assumptions), k.assumptions


def test_a_phase_only_the_producer_advances_is_caught_on_that_side(require_spin):
    # The consumer's phase misses the extra hand-over: it waits on a parity already complete.
    k = _check(SKEW.replace("FLIP", "p_phase ^= 1"), extra_class=RING_HELPERS)
    assert not k.unmodeled, [u.why for u in k.unmodeled]
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]
    assert any("`if` side" in step.what for f in k.findings for step in f.steps), [
        step.what for f in k.findings for step in f.steps]


SPIN_HELPERS = RING_HELPERS.replace(
    "cute.arch.mbarrier_wait(full + idx, phase)",
    "while not cute.arch.mbarrier_try_wait(full + idx, phase):\n            pass").replace(
    "cute.arch.mbarrier_wait(empty + idx, phase ^ 1)",
    "while not cute.arch.mbarrier_try_wait(empty + idx, phase ^ 1):\n            pass")


def test_a_try_wait_spin_on_a_selected_phase_waits_per_side(require_spin):
    # cuDNN frost's wait helper spins on `try_wait`: the spin is the blocking wait on each side.
    ok = _check(SKEW.replace("FLIP", "p_phase ^= 1\n        c_phase ^= 1"), extra_class=SPIN_HELPERS)
    assert "while not cute.arch.mbarrier_try_wait" in SPIN_HELPERS
    assert not ok.unmodeled, [u.why for u in ok.unmodeled]
    assert ok.verdict == "verified", (ok.reason, [f.message for f in ok.findings])
    # One model: no configuration per trip's condition.
    assert any("taken on each of its sides" in a for a in ok.assumptions), ok.assumptions
    assert not any("configuration of its own" in a for a in ok.assumptions), ok.assumptions
    bad = _check(SKEW.replace("FLIP", "p_phase ^= 1"), extra_class=SPIN_HELPERS)
    assert not bad.unmodeled, [u.why for u in bad.unmodeled]
    assert bad.verdict == "counterexample", bad.reason


# cuDNN's block-sparse backward: the load warp counts the Q blocks `n` down by two (two blocks a
# trip), the MMA warp counts `ceil_div(n, 2)` down by one. Both run ceil(n / 2) trips.
HALVED = """\
n = mA.shape[0]
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    k = n
    while k > 0:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        k -= 2
elif warp_idx == 1:
    j = cute.ceil_div(n, 2) + EXTRA
    while j > 0:
        cute.arch.barrier(barrier_id=1, number_of_threads=64)
        j -= 1
"""


def test_a_countdown_of_a_halved_count_pairs_with_a_countdown_by_two(require_spin):
    k = _check(HALVED.replace("EXTRA", "0"))
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])


def test_a_countdown_of_a_halved_count_from_one_more_deadlocks(require_spin):
    k = _check(HALVED.replace("EXTRA", "1"))
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]


# cuDNN's paired block-sparse backward clamps a loaded index with `cute.min(first, nk - 1)` and
# counts the blocks between two offsets loaded at it: the clamp keeps the count a uniform term,
# so the warps' countdowns still pair by the value they count.
def test_a_countdown_of_a_clamped_count_pairs_with_the_full_count(require_spin):
    k = _check(COUNTDOWN.replace("n = mA.shape[0]", "n = cute.min(mA.shape[0], mA.shape[1] - 1)")
               .replace("PROLOGUE_COUNT", "n -= 1"))
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("runs 1 trip more than that loop" in a for a in k.assumptions), k.assumptions


def test_a_countdown_of_a_clamped_halved_count_from_one_more_deadlocks(require_spin):
    ok = _check(HALVED.replace("n = mA.shape[0]", "n = cute.max(mA.shape[0], mA.shape[1])").replace("EXTRA", "0"))
    assert ok.verdict == "verified", (ok.reason, [f.message for f in ok.findings])
    bad = _check(HALVED.replace("n = mA.shape[0]", "n = cute.max(mA.shape[0], mA.shape[1])").replace("EXTRA", "1"))
    assert bad.verdict == "counterexample" and [f.code for f in bad.findings] == ["CS101"], bad.reason


def test_cute_min_and_max_of_numbers_fold():
    src = kernel_source("""\
n = cute.min(3, 5) + cute.max(4, 2)
for i in cutlass.range(n):
    cute.arch.barrier()
""")
    (k,) = build_models(src, "k.py", Settings())
    assert not any("runtime loop bound" in a for a in k.assumptions), k.assumptions
