"""What the code before a runtime condition already decides about it.

Three idioms of shipped kernels (cuDNN's grouped GEMM with bias) whose conditions the front end
used to leave open, so that a role ran where it cannot and a release was skipped where it is not:

- a warp id chosen by the host, `self.bias_warp = 7 if enable_bias else None`, compared with the
  warp index: warp 3 is never the bias warp, and warp 7 is it exactly when `enable_bias`;
- `if total <= 0: exit()` early in the kernel: below it `total > 0` holds on every open path;
- `for i in range(0, n, 2): ... if i == n - 2: release()`: the body marks the last trip, which
  it is only when n is a multiple of 2, so n is taken to be one (stated with the verdict).
"""
import textwrap

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import async_pipeline, kernel_source
from .test_uniform_conditions import TEMPLATE

BIAS_WARP = "self.flag = flag\n        self.bias_warp = 1 if flag else None"


def model_with_bias_warp(body: str):
    src = TEMPLATE.replace("self.flag = flag", BIAS_WARP).format(
        body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return build_models(src, "k.py", Settings())[0]


def accesses(m, warp) -> int:
    procs = [p for p in m.processes if p.warp == warp]
    return sum(isinstance(o, ir.Access) for p in procs for v in p.variants for o in ir.walk(v))


def test_warp_index_compared_with_a_select_of_warp_ids_holds_in_that_warp_only():
    m = model_with_bias_warp("""\
        if warp_idx == self.bias_warp:
            sBuf[lane] = 1.0
        """)
    assert accesses(m, 0) == 0  # neither arm is 0: warp 0 never takes the role
    assert accesses(m, 1) == 1
    # In warp 1 the comparison is the host flag itself: the branch shares its value.
    choice = next(o for p in m.processes if p.warp == 1 for o in ir.walk(p.variants[0]) if isinstance(o, ir.Choice))
    assert choice.shared is not None


def test_select_arms_decide_inequalities_too():
    m = model_with_bias_warp("""\
        if self.bias_warp != 5:
            sBuf[lane] = 1.0
        """)
    # 1 != 5 and None != 5: true on both arms, so every warp writes unconditionally.
    for warp in (0, 1):
        p = next(p for p in m.processes if p.warp == warp)
        assert [type(o).__name__ for o in ir.walk(p.variants[0])] == ["Access"]


def test_an_early_exit_decides_its_condition_below_it():
    m = model_with_bias_warp("""\
        if n <= 0:
            cute.arch.nvvm.exit()
        if n > 0:
            sBuf[lane] = 1.0
        if 0 < n:
            sBuf[lane] = 2.0
        if n <= 0:
            sBuf[lane] = 3.0
        """)
    p = next(p for p in m.processes if p.warp == 0)
    ops = list(ir.walk(p.variants[0]))
    # The exit's own branch is the one choice left; the three conditions after it are decided.
    assert sum(isinstance(o, ir.Choice) for o in ops) == 1
    assert sum(isinstance(o, ir.Access) for o in ops) == 2


def test_a_condition_an_early_exit_does_not_decide_stays_open():
    m = model_with_bias_warp("""\
        if n <= 0:
            cute.arch.nvvm.exit()
        if n > 4:
            sBuf[lane] = 1.0
        """)
    p = next(p for p in m.processes if p.warp == 0)
    assert sum(isinstance(o, ir.Choice) for o in ir.walk(p.variants[0])) == 2


# Warp 0 fills one stage; warp 1 waits for it and must release it for the producer's tail.
ONE_STAGE_HANDOFF = async_pipeline() + """\
n = mA.shape[0]
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    pipe.producer_acquire(st)
    pipe.producer_commit(st)
    st.advance()
    pipe.producer_tail(st)
if warp_idx == 1:
    cs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    pipe.consumer_wait(cs)
"""

LAST_PAIR = ONE_STAGE_HANDOFF + """\
    for i in cutlass.range(0, n, 2, unroll=1):
        if i == LAST:
            pipe.consumer_release(cs)
            cs.advance()
"""


def check(src):
    return api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]


def test_a_loop_that_marks_its_last_pair_takes_even_bounds():
    src = kernel_source(LAST_PAIR.replace("LAST", "n - 2"))
    m = build_models(src, "k.py", Settings())[0]
    assert {c.trips["n"] for c in m.configs} == {2, 4}
    assert any("`n` is taken to be a multiple of 2" in a for a in m.assumptions)
    assert check(src).verdict == "verified"


def test_a_comparison_that_is_not_the_last_trip_leaves_odd_bounds_in():
    # `i == n - 4` is the second-to-last pair: for n = 2 nothing is released (a real deadlock),
    # and nothing says n is even.
    src = kernel_source(LAST_PAIR.replace("LAST", "n - 4"))
    m = build_models(src, "k.py", Settings())[0]
    assert 1 in {c.trips["n"] for c in m.configs}
    assert not any("multiple of" in a for a in m.assumptions)
    assert check(src).verdict == "counterexample"


CHOSEN_STEP = ONE_STAGE_HANDOFF + """\
    step = 1 if cutlass.const_expr(self.srelu) else 2
    for i in cutlass.range(0, n, step, unroll=1):
        last = n - 1 if cutlass.const_expr(self.srelu) else LAST
        if i == last:
            pipe.consumer_release(cs)
            cs.advance()
"""


def chosen_step(last: str) -> str:
    return kernel_source(CHOSEN_STEP.replace("LAST", last), init="self.srelu = act_from_host()")


def test_a_loop_whose_step_a_build_option_chooses_runs_once_per_step():
    # cuDNN's MoE GEMM epilogue: `subtile_step = 1 if const_expr(srelu) else 2` and the bias
    # released at `subtile_cnt - 1` or `- 2`. With the step unknown the bound read as the trip
    # count, and the pair loop never met its last index (a false deadlock).
    src = chosen_step("n - 2")
    m = build_models(src, "k.py", Settings())[0]
    assert all(not c.conds for c in m.configs)  # no configuration per step
    consumer = next(p for p in m.processes if p.warp == 1)
    loops = [o for o in ir.walk(consumer.variants[0]) if isinstance(o, ir.Choice)]
    assert loops and loops[0].shared is not None  # every warp takes the step the build took
    assert any("takes its step from a condition that is the same for every thread" in a for a in m.assumptions)
    assert check(src).verdict == "verified"


def test_a_step_chosen_on_a_negated_condition_is_decided_on_each_side():
    # `2 if not const_expr(srelu) else 1`: the branch numbers `srelu` itself, and inside each side
    # the negation must read that value (else the loop would raise for its step again and again).
    src = chosen_step("n - 2").replace("step = 1 if cutlass.const_expr(self.srelu) else 2",
                                       "step = 2 if not cutlass.const_expr(self.srelu) else 1")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert check(src).verdict == "verified"


def test_a_pair_loop_releasing_at_an_odd_index_still_deadlocks():
    # Where the step is 2 the indices are even: `n - 1` is never one of them.
    k = check(chosen_step("n - 1"))
    assert k.verdict == "counterexample" and [f.code for f in k.findings] == ["CS101"]


EXIT_ON_CHOSEN_OFFSETS = async_pipeline() + """\
offsets = mA
if cutlass.const_expr(self.single_group):
    regs = cute.make_rmem_tensor((1,), cutlass.Int32)
    regs[0] = STORED
    offsets = regs
total = offsets[0]
if total <= 0:
    cute.arch.nvvm.exit()
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    pipe.producer_acquire(st)
    pipe.producer_commit(st)
if warp_idx == 1:
    cs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    pipe.consumer_wait(cs)
    pipe.consumer_release(cs)
"""


def test_an_early_exit_on_an_element_of_a_chosen_tensor_is_taken_by_every_warp_alike():
    # cuDNN's MoE GEMMs: `if total_token <= 0: exit()` on `padded_offsets[-1]`, the offsets input
    # or, in the one-group build, a register copy of the token count. Either way every thread
    # reads the same number, so no warp exits while another waits for it.
    src = kernel_source(EXIT_ON_CHOSEN_OFFSETS.replace("STORED", "cutlass.Int32(cute.size(mA.shape[0]))"),
                        init="self.single_group = single_group_from_host()")
    assert check(src).verdict == "verified"
    # A per-thread count in the register may let the producer exit alone.
    src = kernel_source(EXIT_ON_CHOSEN_OFFSETS.replace("STORED", "mA[cute.arch.thread_idx()[0]]"),
                        init="self.single_group = single_group_from_host()")
    k = check(src)
    assert k.verdict == "counterexample" and [f.code for f in k.findings] == ["CS101"]


def test_a_warp_id_set_on_the_sides_of_a_host_branch_is_decided_per_warp():
    # `if n > 4: w = 1 else: w = None` leaves a select of the branch's condition, like `1 if n > 4
    # else None`: warp 0 never matches it, warp 1 exactly where `n > 4`.
    m = model_with_bias_warp("""\
        w = None
        if n > 4:
            w = 1
        if warp_idx == w:
            sBuf[lane] = 1.0
        """)
    assert accesses(m, 0) == 0
    assert accesses(m, 1) == 1


def test_the_verdict_says_why_the_bound_is_taken_even():
    src = kernel_source(LAST_PAIR.replace("LAST", "n - 2"))
    m = build_models(src, "k.py", Settings())[0]
    assert any(a.endswith("compares its index with `n - 2`") for a in m.assumptions), m.assumptions


DESCENDING_RING = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
n = mA[0]
if warp_idx == 0:
    cute.arch.mbarrier_init(bars, 1)
    cute.arch.mbarrier_init(bars + 1, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
for i in cutlass.range(n - 2, -1, -1):
    step = n - 1 - i
    if warp_idx == 0:
        cute.arch.mbarrier_arrive(bars + step % 2)
    else:
        cute.arch.mbarrier_wait(bars + step % 2, (step // 2) % 2)
last = n - 1
if warp_idx == 1:
    cute.arch.mbarrier_wait(bars + last % 2, (last // 2) % 2)
"""


def test_a_loop_walking_down_to_a_known_end_knows_every_index_and_its_start():
    # cuDNN's block-sparse attention walks its block list backwards,
    # `for i in range(n - 2, -1, -1): step = n - 1 - i; slot = step % 2`: with T trips the
    # indices are T-1 .. 0, so `n` is T + 1 and every slot, and the drain's after the loop, is known.
    m = build_models(kernel_source(DESCENDING_RING), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert any("runtime loop bound `n - 2`" in a for a in m.assumptions), m.assumptions
    arrivals = {c.trips["n - 2"]: [o.bar.name.split(" ")[0] for o in ir.walk(ops) if isinstance(o, ir.MbArrive)]
                for c, ops in zip(m.configs, m.processes[0].variants)}
    assert arrivals[3] == ["bars[1]", "bars", "bars[1]"], arrivals
    waits = [o.bar.name.split(" ")[0] for c, ops in zip(m.configs, m.processes[1].variants) if c.trips["n - 2"] == 2
             for o in ir.walk(ops) if isinstance(o, ir.MbWait)]
    assert waits == ["bars[1]", "bars", "bars"], waits  # the drain waits on slot (n - 1) % 2 = 0


STRIDED_BOUND = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 2)), 128)
n = mA.shape[0]
first = n % 4  # read before the loop: with T pairs, n is 2T
for i in cutlass.range(0, n, 2):
    sBuf[None, (first + i) % 2].fill(0.0)
cute.arch.sync_threads()
x = sBuf.load()
"""


def test_a_bound_of_a_stride_2_loop_is_twice_the_trip_count_where_it_is_read():
    # cuDNN's SwiGLU epilogue: `num_prev = tiles * subtile_cnt` before `for s in range(0,
    # subtile_cnt, 2)`. Read as the trip count T, an odd T shifted every later buffer index.
    m = build_models(kernel_source(STRIDED_BOUND), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    for c, ops in zip(m.configs, m.processes[0].variants):
        writes = [o.region.name.split(" ")[0] for o in ir.walk(ops) if isinstance(o, ir.Access) and o.write]
        # first = 2T % 4 is even: every write is to stage 0, T of them.
        assert writes == ["sBuf[stage"] * c.trips["n"] and all("stage 0" in o.region.name for o in ir.walk(ops)
                                                             if isinstance(o, ir.Access) and o.write), (c.trips, writes)


PER_THREAD_BOUND = """\
tidx, _, _ = cute.arch.thread_idx()
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
n = mA.shape[0]
if warp == 0:
    for b in cutlass.range(tidx, n, 512, unroll=1):
        mA[b] = 0.0
if warp == 1:
    for i in cutlass.range(n):
        cute.arch.sync_warp()
"""


def test_a_bound_of_a_per_thread_strided_loop_stays_its_trip_count_where_it_is_read():
    # cuDNN's `build_thd_origins`: `range(tid, batch, THREADS)` walks the batch one block of
    # threads at a time. Read as T * 512 elsewhere, `batch` made another warp's loop over it
    # hundreds of trips long (a loop with synchronization past the unroll limit: unmodeled).
    k = check(kernel_source(PER_THREAD_BOUND))
    assert not k.unmodeled, [u.why for u in k.unmodeled]
    assert k.verdict == "verified", k.reason
