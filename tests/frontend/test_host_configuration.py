"""Values the host configures once per launch, followed into the kernel (P14).

dist-moe's grouped GEMM sets `self.NUM_CTAS = c["NUM_CTAS"]` from a config dict, derives
`self.NUM_TILE_CTA_BARS = 2 if self.NUM_CTAS == 2 else 0` and `self.cluster_shape_mn = (2, 1) if
self.NUM_CTAS == 2 else (1, 1)`, passes `NUM_CTAS=self.NUM_CTAS` to the kernel, and picks its tile
scheduler with `if const_expr(self.STATIC_SCHEDULER)`. Each of these used to become an unrelated
unknown (a barrier index "not known", a 2-CTA path checked in a 1-CTA model, a scheduler whose
methods never ran), so the kernels were unmodeled or showed false deadlocks.
"""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

HEADER = """\
import cutlass
import cutlass.cute as cute


def lookup(name):
    return CONFIGS[name]


class Quiet:
    def __init__(self):
        self.bars = None

    @cute.jit
    def signal(self):
        pass

    @cute.jit
    def place(self):
        # Reads where the CTA runs (a `cluster_` name, no synchronization): not a synchronizing method.
        return cute.arch.cluster_idx(), self.smem_bytes


class Loud:
    def __init__(self, bars):
        self.bars = bars

    @cute.jit
    def signal(self):
        cute.arch.mbarrier_arrive(self.bars)


class K:
    def __init__(self, name):
        c = lookup(name)
        self.n = c["n"]
        self.slots = 2 if self.n == 2 else 0
        self.pair = c["pair"]
        self.cluster_shape_mn = (2, 1) if self.pair == 2 else (1, 1)
        self.static = c["static"]

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA, self.n).launch(grid=(1, 1, 1), block=(64, 1, 1), cluster=(*self.cluster_shape_mn, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, n: cutlass.Constexpr[int]):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
        bars = smem.allocate_array(cutlass.Int64, num_elems=2)
"""


def model(body: str):
    src = HEADER + "".join("        " + line + "\n" for line in body.splitlines())
    return build_models(src, "k.py", Settings())[0]


def choices(m, warp=0):
    p = next(p for p in m.processes if p.warp == warp)
    return [o for v in p.variants for o in ir.walk(v) if isinstance(o, ir.Choice)]


def accesses(m, warp=0):
    p = next(p for p in m.processes if p.warp == warp)
    return [o for v in p.variants for o in ir.walk(v) if isinstance(o, ir.Access)]


def test_what_the_constructor_derives_from_an_unknown_attribute_is_a_select_on_it():
    # `self.slots > 0` holds exactly where `self.n == 2`: one shared condition, not two.
    m = model("""\
if cutlass.const_expr(self.slots > 0):
    sBuf[lane] = 1.0
if cutlass.const_expr(self.n == 2):
    sBuf[lane] = 2.0""")
    a, b = choices(m)
    assert a.shared is not None and a.shared == b.shared


def test_a_kernel_argument_the_launch_takes_from_the_host_is_that_value():
    # The launch passes `self.n` as `n`: `n == 2` and `self.n == 2` are one condition.
    m = model("""\
if cutlass.const_expr(n == 2):
    sBuf[lane] = 1.0
if cutlass.const_expr(self.n == 2):
    sBuf[lane] = 2.0""")
    a, b = choices(m)
    assert a.shared is not None and a.shared == b.shared


def test_the_modeled_cluster_decides_the_condition_that_picks_it():
    # `cluster_shape_mn` pinned to the modeled (1, 1) is the `else` arm: `self.pair == 2` is
    # False, so the 2-CTA side (a peer arrive) is not checked in the 1-CTA model.
    m = model("""\
if cutlass.const_expr(self.pair == 2):
    cute.arch.mbarrier_arrive(bars, peer_cta_rank_in_cluster=1)
else:
    sBuf[lane] = 1.0""")
    assert not choices(m)
    p = next(p for p in m.processes if p.warp == 0)
    assert not any(isinstance(o, ir.MbArrive) for v in p.variants for o in ir.walk(v))
    assert len(accesses(m)) == 1
    assert any("cluster_shape_mn is chosen by a condition" in a for a in m.assumptions)


def test_objects_a_build_picks_are_checked_one_build_at_a_time():
    # Merged, `sched` would be unknown and `sched.signal()` (an arrive) would not run at all.
    m = model("""\
if cutlass.const_expr(self.static):
    sched = Quiet()
else:
    sched = Loud(bars)
sched.signal()""")
    assert len(m.configs) == 2
    arrives = []
    p = next(p for p in m.processes if p.warp == 0)
    for c, v in zip(m.configs, p.variants):
        static = next(iter(c.conds.values()))
        arrives.append((static, sum(isinstance(o, ir.MbArrive) for o in ir.walk(v))))
    assert sorted(arrives) == [(False, 1), (True, 0)]


def test_a_synchronizing_method_of_an_object_not_followed_is_reported_not_skipped():
    # `lookup(...)` is not followed: the object is unknown. Its `signal()` may be `Loud.signal`,
    # an arrive, so the call is unmodeled (never silently skipped); a method no package class
    # defines with synchronization (`describe`, `place`: `Quiet.place` only reads the CTA's
    # cluster index) stays a plain unknown call.
    m = model("""\
sched = lookup("sched")
sched.describe()
sched.place()
sched.signal()""")
    assert [(u.construct, u.why) for u in m.unmodeled] == [
        (".signal(...)", "method call on an object that could not be resolved; `Loud.signal` in the package "
                         "synchronizes")]


OWN_METHOD = """\
import cutlass
import cutlass.cute as cute
from elsewhere import make_fragment


class Loud:
    @cute.jit
    def signal(self, bars):
        cute.arch.mbarrier_arrive(bars)


class K:
    @cute.jit
    def load(self, bars):
        # The producer's method: it waits. Called through `self` only.
        cute.arch.mbarrier_wait(bars, 0)

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=2)
        frag = make_fragment(mA)
        frag.load()
        frag.signal()
"""


def test_the_kernels_own_methods_do_not_make_an_unknown_objects_call_synchronizing():
    # `frag.load()` on an object not followed is a tensor's load, not the kernel class's `load`
    # (cuDNN's sparse-attention `convert` kernels were unmodeled for it); `frag.signal()` may
    # still be another package class's arrive, so it stays reported.
    m = build_models(OWN_METHOD, "k.py", Settings())[0]
    assert [(u.construct, u.why) for u in m.unmodeled] == [
        (".signal(...)", "method call on an object that could not be resolved; `Loud.signal` in the package "
                         "synchronizes")]


PHASE_REGISTER = """\
import cutlass
import cutlass.cute as cute


class K:
    def __init__(self, deterministic):
        self.deterministic = deterministic

    @cute.jit
    def cta_sync(self, bar, sync_phase):
        # cuDNN's top-k: a tracked mbarrier in deterministic mode, a plain barrier otherwise.
        if cutlass.const_expr(self.deterministic):
            phase = sync_phase[0]
            cute.arch.mbarrier_arrive(bar)
            cute.arch.mbarrier_wait(bar, phase)
            sync_phase[0] = phase ^ cutlass.Int32(1)
        else:
            cute.arch.barrier()

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        sync_phase = cute.make_rmem_tensor((1,), cutlass.Int32)
        sync_phase[0] = 0
        self.cta_sync(bar, sync_phase)
        self.cta_sync(bar, sync_phase)
"""


def test_a_phase_register_a_uniform_branch_flips_is_known_in_each_configuration():
    # The helper's store into the register is interpreted (not forgotten at the call), and the
    # two sides of `const_expr(self.deterministic)` leave different phases: each value is a
    # configuration of its own, in which the second wait's parity is known (1).
    m = build_models(PHASE_REGISTER, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert len(m.configs) == 2
    p = next(p for p in m.processes if p.warp == 0)
    parities = sorted([o.parity for o in ir.walk(v) if isinstance(o, ir.MbWait)] for v in p.variants)
    assert parities == [[], [0, 1]]


OPTIONAL_CONSUMER_WARP = """\
import cutlass
import cutlass.cute as cute
from cutlass import pipeline


class K:
    def __init__(self, enable_bias, consumer_threads):
        self.enable_bias = enable_bias
        self.consumer_threads = consumer_threads  # counts the bias warp only when it is there

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=4)
        pipe = pipeline.PipelineAsync.create(
            num_stages=2, barrier_storage=bars,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.consumer_threads))
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            for i in cutlass.range(3):
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
                st.advance()
            pipe.producer_tail(st)
        if warp_idx == 1:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
            for i in cutlass.range(3):
                pipe.consumer_wait(st)
                pipe.consumer_release(st)
                st.advance()
        if cutlass.const_expr(self.enable_bias):
            if warp_idx == 2:
                st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
                for i in cutlass.range(3):
                    pipe.consumer_wait(st)
                    pipe.consumer_release(st)
                    st.advance()
"""


def test_an_arrival_count_derived_from_the_arrivals_is_per_configuration():
    # cuDNN's MoE grouped GEMMs: the bias-load warp consumes the tile pipeline only in the build
    # with bias, and the consumer group's size counts it only there. Counted in every
    # configuration, the build without bias waited for it at producer_tail: a false deadlock.
    from cutespin import api
    m = build_models(OPTIONAL_CONSUMER_WARP, "k.py", Settings())[0]
    assert len(m.configs) == 2
    counts = {}
    for c, variant in zip(m.configs, next(p for p in m.processes if p.warp == 0).variants):
        bias = next(iter(c.conds.values()))
        counts[bias] = sorted({o.count for o in ir.walk(variant) if isinstance(o, ir.MbInit) and "empty" in o.bar.name})
    assert counts == {True: [64], False: [32]}
    fr = api.check_source(OPTIONAL_CONSUMER_WARP, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert fr.kernels[0].verdict == "verified", (fr.kernels[0].verdict, fr.kernels[0].reason)


def test_a_per_configuration_count_still_finds_the_warp_that_does_not_release():
    # In the build with bias the bias warp is counted; when it never releases, the producer
    # waits for it: the deadlock is found in that configuration.
    from cutespin import api
    src = OPTIONAL_CONSUMER_WARP.replace("""                    pipe.consumer_wait(st)
                    pipe.consumer_release(st)
                    st.advance()
""", """                    pipe.consumer_wait(st)
                    st.advance()
""")
    assert src != OPTIONAL_CONSUMER_WARP
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    k = fr.kernels[0]
    assert k.verdict == "counterexample" and {f.code for f in k.findings} == {"CS101"}, (k.verdict, k.reason)


CLASS_CHOICE = """\
import cutlass
import cutlass.cute as cute


class Once:
    @staticmethod
    @cute.jit
    def signal(bar):
        cute.arch.mbarrier_arrive(bar)


class Twice:
    @staticmethod
    @cute.jit
    def signal(bar):
        cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_arrive(bar)


class K:
    def __init__(self, twice: bool):
        if twice:
            self.Signaller = Twice
        else:
            self.Signaller = Once

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.signaller_cls = self.Signaller
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if cute.arch.thread_idx()[0] == 0:
            cute.arch.mbarrier_init(bar, 64)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        self.signaller_cls.signal(bar)
        cute.arch.mbarrier_wait(bar, 0)
"""


def test_a_class_the_host_picks_on_a_constructor_argument_is_that_class_in_each_configuration():
    # flash-attn's backward kernels: `self.TileScheduler = SingleTileVarlenScheduler if
    # has_seqused_q else ...`, then `self.tile_scheduler_cls.create(...)` in the kernel. The merged
    # attribute was an unknown object, so every scheduler method (which signal the other warps)
    # was unmodeled. Each value of the condition is a configuration, with its own class.
    m = build_models(CLASS_CHOICE, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    arrives = sorted({sum(isinstance(o, ir.MbArrive) for o in ir.walk(v)) for v in m.processes[0].variants})
    assert arrives == [1, 2], arrives
    labels = [c.cond_labels for c in m.configs]
    assert all(len(ls) == 1 and ls[0].startswith("`twice` (line 22)") for ls in labels), labels
