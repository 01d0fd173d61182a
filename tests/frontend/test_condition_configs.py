"""Pipeline states advanced under runtime conditions.

A CTA-uniform condition (P14) whose sides advance a pipeline state differently selects the state:
the methods on it run once per side, in a branch that follows the condition's own. A value
compared with a runtime loop's index is a configuration dimension instead, like a runtime trip
count: each value is interpreted on its own and the branch runs like a folded one. A condition
that may differ between warps leaves the state unknown, and every alias of the state object (a
helper's caller too) sees that.
"""
import textwrap

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.frontend.interp import enum_parts

from ..kernels import interpretation_steps, kernel_source

PIPE = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
sFlag = smem.allocate_tensor(cutlass.Int32, cute.make_layout(4))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
pipe = pipeline.PipelineAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
)
"""


def build(body, extra_class=""):
    src = kernel_source(PIPE + textwrap.dedent(body), extra_class=extra_class)
    return build_models(src, "k.py", Settings())[0]


def waits(ops):
    return [(o.bar.name.split(" ")[0], o.parity) for o in ir.walk(ops) if isinstance(o, ir.MbWait)]


def state_unmodeled(m):
    return [u for u in m.unmodeled if "pipeline state is not known" in u.why]


def leaf_waits(ops) -> list:
    """The last wait on each path through the runtime branches in `ops`."""
    return sorted({waits(p)[-1] for p in leaf_paths(ops) if waits(p)})


def leaf_paths(ops) -> list:
    """Every path through the runtime branches in `ops`, as a list of ops."""
    paths = [[]]
    for o in ops:
        if isinstance(o, ir.Choice):
            paths = [p + q for p in paths for alt in o.alternatives for q in leaf_paths(alt)]
        else:
            paths = [p + [o] for p in paths]
    return paths


def test_uniform_condition_advancing_a_state_selects_it_per_side():
    # After the branch the state is one side's or the other's: the acquire after it runs once per
    # side, in a branch that follows the condition's own (one model, no configurations).
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if mA.shape[0] > 4:
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                st.advance()
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
        """)
    assert not state_unmodeled(m), m.unmodeled
    assert len(m.configs) == 1
    p0 = next(p for p in m.processes if p.warp == 0)
    after, commit = [o for o in p0.variants[0] if isinstance(o, ir.Choice) and o.follows]  # acquire, commit
    assert after.follows[1] == "mA.shape[0] > 4" and not after.swapped
    assert (commit.shared, commit.follows) == (after.shared, after.follows)
    assert [waits(alt) for alt in after.alternatives] == [[("pipe.empty[1]", 1)], [("pipe.empty[0]", 1)]]
    branch = next(o for o in p0.variants[0] if isinstance(o, ir.Choice) and not o.follows)
    assert (after.shared, after.enum) == (branch.shared, branch.enum)  # decided alike
    assert any("taken on each of its sides" in a and "mA.shape[0] > 4" in a for a in m.assumptions)


def test_a_negated_condition_names_the_source_side_it_follows():
    # `if not (mA.shape[0] > 4)` branches on `mA.shape[0] > 4` with its sides swapped: the acquire
    # that follows it is swapped too, so a trail names the side of the `if` as written.
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if not (mA.shape[0] > 4):
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                st.advance()
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
        """)
    p0 = next(p for p in m.processes if p.warp == 0)
    after = [o for o in p0.variants[0] if isinstance(o, ir.Choice) and o.follows][0]
    assert after.swapped and after.follows[1] == "not (mA.shape[0] > 4)", after
    # alternatives[0]: `mA.shape[0] > 4` holds, the source's `else` (no advance).
    assert [waits(alt) for alt in after.alternatives] == [[("pipe.empty[0]", 1)], [("pipe.empty[1]", 1)]]


def test_condition_that_may_differ_between_warps_leaves_the_state_unknown():
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            # Each lane's own element: a per-thread value (one element every lane names alike
            # would be one value for the CTA, P14).
            if sFlag[cute.arch.lane_idx() % 4] > 0:
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                st.advance()
            pipe.producer_acquire(st)
        """)
    um = state_unmodeled(m)
    assert um and "may differ between warps" in um[0].why
    assert len(m.configs) == 1


def test_equal_advances_on_both_sides_reach_the_callers_state():
    # The helper's branch copies the state per side; the common result is written back into the
    # object, which the caller holds under its own name.
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            self.step(st, sFlag)
            pipe.producer_acquire(st)
        """, extra_class="""\
        @cute.jit
        def step(self, st, sFlag):
            if sFlag[0] > 0:
                st.advance()
            else:
                st.advance()
        """)
    assert not m.unmodeled, m.unmodeled
    p0 = next(p for p in m.processes if p.warp == 0)
    assert waits(p0.variants[0])[-1] == ("pipe.empty[1]", 1)


def test_a_helper_advancing_under_a_per_warp_condition_makes_the_callers_state_unknown():
    # Before, the caller kept the state as it was before the call (the sides advanced copies).
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            self.maybe_step(st, sFlag)
            pipe.producer_acquire(st)
        """, extra_class="""\
        @cute.jit
        def maybe_step(self, st, sFlag):
            if sFlag[cute.arch.lane_idx() % 4] > 0:
                st.advance()
        """)
    assert state_unmodeled(m), m.unmodeled


def test_nested_uniform_conditions_select_a_state_of_selections():
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if mA.shape[0] > 4:
                st.advance()
                if mA.shape[1] > 4:
                    st.advance()
            pipe.producer_acquire(st)
        """)
    assert not state_unmodeled(m), m.unmodeled
    assert len(m.configs) == 1
    p0 = next(p for p in m.processes if p.warp == 0)
    assert leaf_waits(p0.variants[0]) == [("pipe.empty[0]", 0), ("pipe.empty[0]", 1), ("pipe.empty[1]", 1)]


GRID_STRIDE_STATES = """\
start, _, _ = cute.arch.block_idx()
gdim, _, _ = cute.arch.grid_dim()
n_blocks = cute.ceil_div(mA.shape[0], 128)
prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
"""
PREFETCH_THEN_LOOP = GRID_STRIDE_STATES + """\
first = start + 0 * gdim
if warp_idx == 0:
    if first < n_blocks:
        pipe.producer_acquire(prod)
        pipe.producer_commit(prod)
        prod.advance()
for b in cutlass.range(start, n_blocks, gdim):
    if warp_idx == 1:
        pipe.consumer_wait(cons)
        pipe.consumer_release(cons)
        cons.advance()
    if warp_idx == 0:
        pipe.producer_acquire(prod)
        pipe.producer_commit(prod)
        prod.advance()
"""


def test_a_runtime_loop_runs_so_its_start_is_below_its_stop_also_before_it():
    # quack's RMSNorm backward prefetches the first block under `if init_bidx < M_ceil:` and then
    # loops `range(bidx_start, M_ceil, gdim)`. Every configuration runs the loop at least once
    # (P9), so the prefetch condition holds in every one: it is not a configuration of its own
    # whose `False` side would leave the consumer waiting for a block never produced.
    m = build(PREFETCH_THEN_LOOP)
    assert not state_unmodeled(m), m.unmodeled
    assert all(not c.conds for c in m.configs), [c.conds for c in m.configs]
    p0 = next(p for p in m.processes if p.warp == 0)
    assert not any(isinstance(o, ir.Choice) for v in p0.variants for o in ir.walk(v))


LOOKAHEAD = GRID_STRIDE_STATES + """\
if warp_idx == 0:
    if start < n_blocks:
        pipe.producer_acquire(prod)
        pipe.producer_commit(prod)
        prod.advance()
for b in cutlass.range(start, n_blocks, gdim):
    if warp_idx == 0:
        if b + gdim < n_blocks:
            pipe.producer_acquire(prod)
            pipe.producer_commit(prod)
            prod.advance()
    if warp_idx == 1:
        pipe.consumer_wait(cons)
        pipe.consumer_release(cons)
        cons.advance()
"""


def test_a_grid_stride_lookahead_is_decided_by_the_trip_count():
    # quack's RMSNorm backward loads block `bidx + gdim` while working on `bidx`, under
    # `if ahead_bidx < M_ceil:`. In a configuration of T trips that holds on every trip but the
    # last: not a configuration of its own whose `False` on an early trip would starve the
    # consumer, and not an unknown state after the branch.
    m = build(LOOKAHEAD)
    assert not state_unmodeled(m), m.unmodeled
    assert all(not c.conds for c in m.configs), [c.conds for c in m.configs]
    p0 = next(p for p in m.processes if p.warp == 0)
    for trips, v in zip((c.trips for c in m.configs), p0.variants):
        t = next(iter(trips.values()))
        commits = [o for o in ir.walk(v) if isinstance(o, ir.MbArrive)]
        # The prefetch, then one load ahead on each trip but the last.
        assert len(commits) == 1 + (t - 1), (t, len(commits))


def test_a_grid_stride_lookahead_kernel_is_verified(require_spin):
    from cutespin import api
    src = kernel_source(PIPE + textwrap.dedent(LOOKAHEAD))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified", (kr.verdict, kr.reason, [f.message for f in kr.findings])


SELECTED_SLOT = '''
import cutlass
import cutlass.cute as cute


class K:
    def __init__(self, layernorm):
        self.slots = 2 if layernorm else 1

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        sRed = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 3)))
        slot = 1 * self.slots
        if warp_idx == 0:
            sRed[None, 0][lane] = 1.0
        if warp_idx == 1:
            sRed[None, slot][lane] = 2.0
'''


def test_a_buffer_index_chosen_by_a_host_select_is_a_configuration():
    # quack's RMSNorm backward: `red_slot = state.index * self.bufs_per_stage` with
    # `bufs_per_stage = 2 if is_layernorm else 1`. Each value of the host condition is a
    # configuration, in which the slot is a number: warp 1's slot is never warp 0's slot 0.
    m = build_models(SELECTED_SLOT, "k.py", Settings())[0]
    assert sorted(v for c in m.configs for v in c.conds.values()) == [False, True]
    p1 = next(p for p in m.processes if p.warp == 1)
    names = {tuple(o.region.name for o in ir.walk(v) if isinstance(o, ir.Access)) for v in p1.variants}
    assert len(names) == 2 and all("stage" in n[0] for n in names), names
    assert any("sRed[None, slot]" in a and "selects a buffer index" in a for a in m.assumptions)


def test_comparisons_of_one_value_with_constants_select_on_that_values_choice():
    # `mode == 1` and `mode == 2` both advancing: the acquire after them follows both branches,
    # each a guard on the one launch value of `mode` (Choice.enum), so no path has both hold.
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if self.mode == 1:
                st.advance()
            if self.mode == 2:
                st.advance()
                st.advance()
            pipe.producer_acquire(st)
        """)
    assert not state_unmodeled(m), m.unmodeled
    assert len(m.configs) == 1
    p0 = next(p for p in m.processes if p.warp == 0)
    follows = [o for o in ir.walk(p0.variants[0]) if isinstance(o, ir.Choice) and o.follows]
    assert follows and {o.enum[0] for o in follows} == {0}, follows  # one value, term 0
    # The acquire after the branches: 0, 1 or 2 advances, i.e. stage 0, 1 or 0 (second lap);
    # the path where both hold (3 advances, stage 1 of the second lap) is guarded out by `ue`.
    assert set(leaf_waits(p0.variants[0])) >= {("pipe.empty[0]", 0), ("pipe.empty[0]", 1), ("pipe.empty[1]", 1)}


def test_a_value_compared_with_a_runtime_loops_index_is_one_of_its_indices():
    # The early release of the CUTLASS block-scaled GEMM epilogue: `if subtile_idx ==
    # self.release_at` in every trip. Each configuration releases exactly once, in the trip the
    # value names; none skips it (that would be a host configuration error, stated).
    m = build("""\
        if warp_idx == 1:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
            pipe.consumer_wait(st)
            for subtile_idx in cutlass.range(mA.shape[1]):
                if subtile_idx == self.release_at:
                    pipe.consumer_release(st)
                    st.advance()
            pipe.consumer_wait(st)
        """)
    assert not state_unmodeled(m), m.unmodeled
    assert any("compared with the index of the runtime loop over `mA.shape[1]`" in a for a in m.assumptions)
    p1 = next(p for p in m.processes if p.warp == 1)
    chosen = set()
    for c, v in zip(m.configs, p1.variants):
        [released_in] = [enum_parts(k[1])[1] for k, held in c.conds.items() if held]
        assert max(released_in) < c.trips["mA.shape[1]"], c.describe()
        chosen.add((c.trips["mA.shape[1]"], *released_in))
        assert waits(v) == [("pipe.full", 0), ("pipe.full[1]", 0)], c.describe()
    # Every trip of every trip count, and nothing else.
    trips = {c.trips["mA.shape[1]"] for c in m.configs}
    assert chosen == {(n, i) for n in trips for i in range(n)}


def test_advancing_by_a_count_that_is_not_known_leaves_the_state_unknown():
    # Before, `advance(n)` with a runtime n silently advanced by one.
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            st.advance(sFlag[0])
            pipe.producer_acquire(st)
        """)
    [u] = state_unmodeled(m)
    assert "advanced by a count that is not known" in u.why


def test_advance_iters_advances_that_many_steps():
    # quack's PipelineStateWAdvance.advance_iters(n).
    m = build("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            st.advance_iters(3)
            pipe.producer_acquire(st)
        """)
    assert not m.unmodeled, m.unmodeled
    p0 = next(p for p in m.processes if p.warp == 0)
    assert waits(p0.variants[0]) == [("pipe.empty[1]", 0)]


def test_a_pipeline_built_differently_on_the_sides_of_a_uniform_condition_is_a_configuration():
    # flash-attn-4's MLA forward: `if const_expr(self.use_tma_KV): pipeline_K = <TmaUmma>
    # else: pipeline_K = <AsyncUmma>`; each side's pipeline is checked in a configuration.
    m = build("""\
        bars2 = smem.allocate_array(cutlass.Int64, num_elems=6)
        if cutlass.const_expr(self.use_tma):
            other = pipeline.PipelineAsync.create(
                num_stages=2,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
                barrier_storage=bars2,
            )
        else:
            other = pipeline.PipelineAsync.create(
                num_stages=3,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
                barrier_storage=bars2,
            )
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            other.producer_acquire(st)
        """)
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 2
    assert any("is the same for every thread of the CTA" in a and "self.use_tma" in a for a in m.assumptions)


def test_a_const_expr_option_the_host_does_not_fold_is_a_configuration():
    """cuDNN's grouped GEMMs: `if const_expr(self.use_extra):` on an option `__init__` computes
    from its arguments. Compile-time, so one value for the launch; each value a configuration,
    the same value wherever the kernel tests the same option."""
    src = kernel_source(PIPE + textwrap.dedent("""\
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if cutlass.const_expr(self.use_extra):
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                st.advance()
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
        if warp_idx == 1:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
            if cutlass.const_expr(not self.use_extra):
                pass
            else:
                pipe.consumer_wait(st)
                pipe.consumer_release(st)
                st.advance()
            pipe.consumer_wait(st)
            pipe.consumer_release(st)
        """), init="self.use_extra = host_option()")
    m = build_models(src, "k.py", Settings())[0]
    assert not state_unmodeled(m), m.unmodeled
    assert len(m.configs) == 2, m.configs
    p1 = next(p for p in m.processes if p.warp == 1)
    by_value = {next(iter(c.conds.values())): waits(v) for c, v in zip(m.configs, p1.variants)}
    assert by_value[True][-1] == ("pipe.full[1]", 0)  # both tests of the option agree
    assert by_value[False][-1] in (("pipe.full", 0), ("pipe.full[0]", 0))


def test_a_barrier_chosen_on_a_host_option_is_a_configuration_per_value():
    """dist-moe: `bar = bars.data_ptr() if NUM_CTAS == 2 else None` with `NUM_CTAS = self.NUM_CTAS`
    set by the host from its arguments; the barrier is used under `const_expr(NUM_CTAS == 2)`.
    The option is one value for the launch, so each value is a configuration in which both the
    selection and the test fold."""
    src = kernel_source("""\
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=1)
        NUM_CTAS = self.NUM_CTAS
        pair_bar = bars if NUM_CTAS == 2 else None
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            if cutlass.const_expr(NUM_CTAS == 2):
                cute.arch.mbarrier_init(pair_bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp_idx == 0:
            if cutlass.const_expr(NUM_CTAS == 2):
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(pair_bar)
        if warp_idx == 1:
            if cutlass.const_expr(NUM_CTAS == 2):
                cute.arch.mbarrier_wait(pair_bar, 0)
        """, init="self.NUM_CTAS = 2 if host_flag() else 1")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 2, m.configs
    p1 = next(p for p in m.processes if p.warp == 1)
    by_value = {next(iter(c.conds.values())): waits(v) for c, v in zip(m.configs, p1.variants)}
    assert by_value == {True: [("bars", 0)], False: []}, by_value


def test_a_build_choice_between_two_barrier_objects_is_a_configuration_per_value():
    """cuDNN's decode kernels: `gate = bars.q_empty if const_expr(EARLY_Q) else bars.q_alias`, with
    EARLY_Q a host option and each barrier wrapped in a package class around its SMEM pointer.
    A build picks one of them, so each value is a configuration and the gate's waits resolve."""
    extra = """\
class Gate:
    def __init__(self, ptr):
        self.ptr = ptr

    @cute.jit
    def wait(self, phase):
        cute.arch.mbarrier_wait(self.ptr, phase)

    @cute.jit
    def arrive(self):
        cute.arch.mbarrier_arrive(self.ptr)
"""
    src = kernel_source("""\
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=2)
        q_empty = Gate(bars)
        q_alias = Gate(bars + 1)
        gate = q_empty if cutlass.const_expr(self.early_q) else q_alias
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            cute.arch.mbarrier_init(bars, 1)
            cute.arch.mbarrier_init(bars + 1, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp_idx == 0:
            with cute.arch.elect_one():
                gate.arrive()
        if warp_idx == 1:
            gate.wait(0)
        """, init="self.early_q = host_flag()").replace("\n\nclass K:", "\n\n" + extra + "\n\nclass K:", 1)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 2, m.configs
    p1 = next(p for p in m.processes if p.warp == 1)
    by_value = {next(iter(c.conds.values())): waits(v) for c, v in zip(m.configs, p1.variants)}
    assert by_value == {True: [("bars", 0)], False: [("bars[1]", 0)]}, by_value


ROUTINE_CHOICE = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    cute.arch.mbarrier_init(bars, 1)
    cute.arch.mbarrier_init(bars + 1, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
MATH
    producer_fn = self.arrive_first if cutlass.const_expr(self.split) else self.arrive_second
    with cute.arch.elect_one():
        producer_fn(bars)
if warp_idx == 1:
    cute.arch.mbarrier_wait(bars, 0)
"""
ARRIVE_HELPERS = """\
    @cute.jit
    def arrive_first(self, bars):
        cute.arch.mbarrier_arrive(bars)

    @cute.jit
    def arrive_second(self, bars):
        cute.arch.mbarrier_arrive(bars + 1)
"""


def test_a_build_choice_between_two_methods_is_a_configuration_per_value():
    """cuDNN's DSA score recompute: `producer_fn = self.producer_warp_split if
    const_expr(self.split) else self.producer`, `split` read from the environment on the host,
    then `producer_fn(bars, ...)`. A build picks one routine, so each value is a configuration
    and the call is interpreted (it was unmodeled: a call of an unknown value given barriers)."""
    src = kernel_source(ROUTINE_CHOICE.replace("MATH\n", ""), init="self.split = host_flag()",
                        extra_class=ARRIVE_HELPERS)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 2, m.configs
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    # The build that arrives on the second barrier leaves warp 1 waiting on the first forever.
    assert kr.verdict == "counterexample" and {f.code for f in kr.findings} == {"CS101"}, (kr.verdict, kr.reason)


def test_an_operand_of_and_fixed_by_the_configuration_short_circuits():
    # flash-attn-4's MLA dQ/dQv epilogue: `store = const_expr(self.flag) and i < n_k`, `n_k` bound
    # only under `if const_expr(self.flag):`. In the configuration that fixes the flag False,
    # `and` is False as in Python and `n_k` is not read (it was an unbound name, so the branch on
    # `store` was a choice per warp: one warp skipped the others' barrier, a false deadlock).
    m = build("""\
        if cutlass.const_expr(mA.shape[0] > 4):
            n_k = cute.size(sFlag.shape, mode=[3])
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if cutlass.const_expr(mA.shape[0] > 4):
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                st.advance()
            pipe.producer_acquire(st)
        for i in cutlass.range(2, unroll_full=True):
            store = cutlass.const_expr(mA.shape[0] > 4) and i < n_k
            if not store:
                cute.arch.sync_threads()
        """)
    assert len(m.configs) == 2, m.configs
    p1 = next(p for p in m.processes if p.warp == 1)
    for c, v in zip(m.configs, p1.variants):
        chosen = [o for o in ir.walk(v) if isinstance(o, ir.Choice)]
        if next(iter(c.conds.values())) is False:
            assert not chosen  # both syncs run unconditionally
        else:
            assert all(o.shared is not None for o in chosen), chosen


COMPOUND = """\
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    if mA.shape[0] > 4 and mA.shape[1] > 4:
        pipe.producer_acquire(st)
        pipe.producer_commit(st)
        st.advance()
    pipe.producer_acquire(st)
    pipe.producer_commit(st)
    st.advance()
    pipe.producer_tail(st)
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    if CONSUMER_CONDITION:
        pipe.consumer_wait(st)
        pipe.consumer_release(st)
        st.advance()
    pipe.consumer_wait(st)
    pipe.consumer_release(st)
"""


def test_a_state_advanced_under_a_compound_uniform_condition_is_selected_per_side():
    # flash-attn's `if has_k_tile and m_block_count > 0:` around a tile's pipeline steps: after
    # the branch the state is one side's or the other's. The methods on it run once per side, in
    # a branch that follows the condition's own (one model, no configuration per condition).
    m = build(COMPOUND.replace("CONSUMER_CONDITION", "mA.shape[0] > 4 and mA.shape[1] > 4"))
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 1
    p0 = next(p for p in m.processes if p.warp == 0)
    follows = [o for o in ir.walk(p0.variants[0]) if isinstance(o, ir.Choice) and o.follows]
    assert follows and follows[0].follows == (29, "mA.shape[0] > 4 and mA.shape[1] > 4"), follows
    sides = [waits(alt) for alt in follows[0].alternatives]
    assert sides[0][0] == ("pipe.empty[1]", 1) and sides[1][0] == ("pipe.empty[0]", 1), sides
    shared = {o.shared for o in ir.walk(p0.variants[0]) if isinstance(o, ir.Choice)}
    assert len(shared) == 1, shared  # the branch and the ones that follow it: one condition


def test_roles_that_advance_under_the_same_compound_condition_are_verified(require_spin):
    from cutespin import api
    src = kernel_source(PIPE + COMPOUND.replace("CONSUMER_CONDITION", "mA.shape[0] > 4 and mA.shape[1] > 4"))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert not kr.unmodeled, kr.unmodeled
    assert kr.verdict == "verified", (kr.verdict, kr.reason, [f.message for f in kr.findings])


def test_a_consumer_that_advances_under_another_condition_deadlocks(require_spin):
    from cutespin import api
    src = kernel_source(PIPE + COMPOUND.replace("CONSUMER_CONDITION", "mA.shape[0] > 4 and mA.shape[2] > 4"))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert not kr.unmodeled, kr.unmodeled
    assert kr.verdict == "counterexample", (kr.verdict, kr.reason)
    assert "CS101" in [f.code for f in kr.findings], [f.message for f in kr.findings]
    steps = [s.what for f in kr.findings for s in f.steps]
    assert any("follows the" in s and "mA.shape[0] > 4 and mA.shape[1] > 4" in s for s in steps), steps


PARTICIPANTS = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=4)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
producer, consumer = pipeline.PipelineAsync.create(
    num_stages=2,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
).make_participants()
has_extra = mA.shape[0] > 4 and mA.shape[1] > 4
if warp_idx == 0:
    if has_extra:
        h = producer.acquire_and_advance()
        h.commit()
    h = producer.acquire_and_advance()
    h.commit()
    producer.tail()
if warp_idx == 1:
    if CONSUMER_CONDITION:
        h = consumer.wait_and_advance()
        h.release()
    h = consumer.wait_and_advance()
    h.release()
"""


def test_handles_acquired_on_a_selected_participant_state_commit_per_side(require_spin):
    # The handle after the branch is one side's stage or the other's (P.HandleSel): its commit
    # and release run once per side, following the branch.
    from cutespin import api
    src = kernel_source(PARTICIPANTS.replace("CONSUMER_CONDITION", "has_extra"))
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    p0 = next(p for p in m.processes if p.warp == 0)
    follows = [o for o in ir.walk(p0.variants[0]) if isinstance(o, ir.Choice) and o.follows]
    arrives = [[o.bar.name.split(" ")[0] for o in ir.walk(alt) if isinstance(o, ir.MbArrive)]
               for c in follows for alt in c.alternatives]
    assert ["pipeline.full[1]"] in arrives and ["pipeline.full"] in arrives, arrives
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason, kr.unmodeled)
    bad = kernel_source(PARTICIPANTS.replace("CONSUMER_CONDITION", "mA.shape[0] > 4"))
    kb = api.check_source(bad, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kb.verdict == "counterexample", (kb.verdict, kb.reason)


def test_a_handle_selected_on_two_conditions_releases_per_side(require_spin):
    # Two uniform branches each advance the consumer: the handle after them is selected on both
    # (a selection whose sides are selections).
    from cutespin import api
    body = PARTICIPANTS.replace("""    if CONSUMER_CONDITION:
        h = consumer.wait_and_advance()
        h.release()
""", """    if has_extra:
        h = consumer.wait_and_advance()
        h.release()
    if mA.shape[2] > mA.shape[0]:
        h = consumer.wait_and_advance()
        h.release()
""").replace("""    if has_extra:
        h = producer.acquire_and_advance()
        h.commit()
""", """    if has_extra:
        h = producer.acquire_and_advance()
        h.commit()
    if mA.shape[2] > mA.shape[0]:
        h = producer.acquire_and_advance()
        h.commit()
""")
    kr = api.check_source(kernel_source(body), "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason, kr.unmodeled)


EXCLUSIVE_MODES = """\
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    if self.mode == 1:
        pipe.producer_acquire(st)
        pipe.producer_commit(st)
        st.advance()
    if self.mode == 2:
        pipe.producer_acquire(st)
        pipe.producer_commit(st)
        st.advance()
    pipe.producer_tail(st)
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    if self.mode in CONSUMED:
        pipe.consumer_wait(st)
        pipe.consumer_release(st)
        st.advance()
"""


def test_two_comparisons_of_one_value_never_both_hold_in_the_selection(require_spin):
    # If `mode == 1` and `mode == 2` could both hold, two stages would be filled and one released:
    # the tail would wait forever. One launch value of `mode` (ue) rules that path out.
    from cutespin import api
    ok = api.check_source(kernel_source(PIPE + EXCLUSIVE_MODES.replace("CONSUMED", "(1, 2)")), "k.py",
                          Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert ok.verdict == "verified" and not ok.unmodeled, (ok.verdict, ok.reason, ok.unmodeled)
    # The consumer skips mode 2: that launch's tail waits for a stage nobody releases.
    bad = api.check_source(kernel_source(PIPE + EXCLUSIVE_MODES.replace("CONSUMED", "(1, 3)")), "k.py",
                           Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert bad.verdict == "counterexample" and "CS101" in [f.code for f in bad.findings], bad.reason


# Unrolled register math before the routine choice (compute loops: one trip in the compact try).
SPLIT_PAST_BUDGET = ROUTINE_CHOICE.replace("MATH\n", """\
    acc = cutlass.Float32(0.0)
    for i in cutlass.range_constexpr(64):
        acc = acc + cute.math.exp2(mA[i], fastmath=True)
    mA[0] = acc
""")


def test_a_kernel_out_of_budget_before_its_configurations_is_tried_again_compact(monkeypatch):
    """cuDNN's DSA score recompute: unrolled register math takes the budget before the build choice
    of the producer routine is checked per value, so that call stays an unknown call receiving
    barriers. The compact second try (compute loops one trip each) fits and checks both values,
    both when the first run ran out and when only the configurations' runs did."""
    from cutespin.frontend import build_kernel, build_kernel_compacting, interp
    from cutespin.frontend.discover import discover
    src = kernel_source(SPLIT_PAST_BUDGET, init="self.split = host_flag()", extra_class=ARRIVE_HELPERS)
    full, compact = interpretation_steps(src, False), interpretation_steps(src, True)
    assert compact * 2 < full
    info = discover(src, "k.py")
    site = info.kernels[0]
    for budget, first_run_fits in ((compact + 10, False), (full - 10, True)):
        monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", budget)
        first = build_kernel(info, site, "k.py", Settings())
        assert first.splits_left and first.unmodeled, budget
        over = any("interpretation steps" in u.why for u in first.unmodeled)
        assert over != first_run_fits, (budget, first.unmodeled)
        if first_run_fits:
            assert any("past the interpretation budget" in a and "self.split" in a for a in first.assumptions)
        m = build_kernel_compacting(info, site, "k.py", Settings())
        assert not m.unmodeled and len(m.configs) == 2, (budget, m.unmodeled, m.configs)
        assert any("one trip at an unknown index" in a for a in m.assumptions), m.assumptions


def test_the_compact_try_is_checked_like_any_model(monkeypatch, require_spin):
    # Past the budget, the build that arrives on the second barrier still leaves warp 1 waiting.
    from cutespin.frontend import interp
    src = kernel_source(SPLIT_PAST_BUDGET, init="self.split = host_flag()", extra_class=ARRIVE_HELPERS)
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", interpretation_steps(src, False) - 10)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "counterexample" and {f.code for f in kr.findings} == {"CS101"}, (kr.verdict, kr.reason)
    fixed = src.replace("cute.arch.mbarrier_arrive(bars + 1)", "cute.arch.mbarrier_arrive(bars)")
    kr = api.check_source(fixed, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason)


NO_TILE = """\
    if warp_idx == 0:
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        lo, hi = tile_bounds(mA)
        for q in cutlass.range(lo, hi, 1, unroll=1):
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
            st.advance()
        if lo >= hi:
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
            st.advance()
        pipe.producer_tail(st)
    elif warp_idx == 1:
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        lo, hi = tile_bounds(mA)
        for q in cutlass.range(lo, hi, 1, unroll=1):
            pipe.consumer_wait(st)
            pipe.consumer_release(st)
            st.advance()
        if lo >= hi:
            pipe.consumer_wait(st)
            pipe.consumer_release(st)
            st.advance()
    """


def test_a_test_of_the_loop_range_after_it_agrees_with_the_trips_it_ran(require_spin):
    """cuDNN's SDPA backward: `lo, hi = _bounds(...)` (a value with no term), `for q in range(lo,
    hi)`, then `if lo >= hi:` one more handoff for a CTA with no tile. The loop starts at 0 as
    stated, so `lo` is 0 and the test is decided by the trip count (never true: loops run 1..B
    trips, P9); it was a choice per warp, the pipeline state after it unknown."""
    src = kernel_source(PIPE + textwrap.dedent(NO_TILE))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason)
    assert any("starts at 0" in a for a in kr.assumptions), kr.assumptions
    # Loops run 1..B trips (P9): a consumer that takes one more handoff whenever there is a tile
    # waits for one the producer never makes.
    body = textwrap.dedent(NO_TILE)
    at = body.rindex("if lo >= hi:")
    src = kernel_source(PIPE + body[:at] + "if lo < hi:" + body[at + len("if lo >= hi:"):])
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "counterexample" and {f.code for f in kr.findings} == {"CS101"}, (kr.verdict, kr.reason)


FIRST_TILE = """\
    if warp_idx == 0:
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        lo, hi = tile_bounds(mA)
        if lo < hi:
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
            st.advance()
        for q in cutlass.range(lo, hi, 1, unroll=1):
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
            st.advance()
        pipe.producer_tail(st)
    elif warp_idx == 1:
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        lo, hi = tile_bounds(mA)
        if lo < hi:
            pipe.consumer_wait(st)
            pipe.consumer_release(st)
            st.advance()
        for q in cutlass.range(lo, hi, 1, unroll=1):
            pipe.consumer_wait(st)
            pipe.consumer_release(st)
            st.advance()
    """


def test_a_test_of_the_loop_range_before_it_is_its_entry_test(require_spin):
    # cuDNN's SDPA backward loads K and V under `if lo < hi:` before its loop over `range(lo, hi)`:
    # the loop's entry test, true in every configuration (P9), stated as such.
    src = kernel_source(PIPE + textwrap.dedent(FIRST_TILE))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason)
    assert any("is the entry test of the loop" in a for a in kr.assumptions), kr.assumptions


def test_the_same_names_in_another_function_are_not_that_loops_entry_test():
    # A helper's own `lo < hi` is no test of the kernel's loop, whatever its names.
    helper = """\
    @cute.jit
    def other_tiles(self, mA, st):
        lo, hi = tile_bounds(mA)
        if lo < hi:
            st.advance()
"""
    body = textwrap.dedent(FIRST_TILE).replace("    pipe.producer_tail(st)\n",
                                                "    self.other_tiles(mA, st)\n    pipe.producer_tail(st)\n")
    assert "self.other_tiles" in body
    src = kernel_source(PIPE + body, extra_class=helper)
    m = build_models(src, "k.py", Settings())[0]
    helper_line = src.splitlines().index("        if lo < hi:") + 1
    decided = [a for a in m.assumptions if "is the entry test of the loop" in a]
    assert decided and not any(f"(line {helper_line})" in a for a in decided), decided
