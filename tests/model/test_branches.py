"""Runtime branches in the Promela model: CTA-uniform values, effect-free branches, and where a
warp's atomic sequence ends (P10, P14)."""
import textwrap

from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model import promela
from cutespin.model.promela import lower

from ..kernels import interpretation_steps

TEMPLATE = """\
import cutlass
import cutlass.cute as cute


class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor, n: cutlass.Int32):
        self.kernel(mA, n).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, n: cutlass.Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
        sTmp = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
{body}
"""


def source(body: str) -> str:
    return TEMPLATE.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))


def check(src: str):
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert fr.error is None
    return fr.kernels[0]


def pml(src: str) -> str:
    return lower(build_models(src, "k.py", Settings())[0]).text


def test_uniform_condition_reads_and_sets_one_shared_value(require_spin):
    text = pml(source("""\
        if n > 0:
            if warp_idx == 0:
                sBuf[lane] = 1.0
            cute.arch.sync_threads()
        if warp_idx == 1:
            mA[lane] = sBuf[lane]
        """))
    assert "byte uc[1];" in text
    assert text.count("(uc[0] != 2) -> uc[0] = 1") == 2  # one per warp
    assert text.count("(uc[0] != 1) -> uc[0] = 2") == 2


def test_branch_that_only_touches_untracked_buffers_is_left_out(require_spin):
    # sTmp is only touched by warp 0: no other agent can race with it, so it is not tracked.
    body = textwrap.dedent("""\
        if warp_idx == 0:
            if mA[0] > 0.0:
                sTmp[lane] = 1.0
            else:
                sTmp[lane] = 2.0
        cute.arch.sync_threads()
        """)
    text = pml(source(body))
    assert ":: true" not in text and "a_2 = a_2 |" not in text


MANY_BRANCHES = "".join(f"""\
    if mA[{i}] > 0.0:
        sBuf[lane] = {i}.0
        cute.arch.fence_view_async_shared()
""" for i in range(12))
WRITER_THEN_READER = """\
if warp_idx == 0:
{branches}
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""


def test_many_branches_end_the_atomic_sequence_past_the_path_budget(require_spin, monkeypatch):
    src = source(WRITER_THEN_READER.format(branches=textwrap.indent(MANY_BRANCHES, "")))
    # 12 branches in a row: 2^12 paths; with a budget of 64 the sequence ends every 6 branches.
    text = pml(src)
    assert text.count("};") == 1
    kept = check(src)
    monkeypatch.setattr(promela, "PATH_BUDGET", 1 << 20)
    assert "};" not in pml(src)
    walked = check(src)
    assert kept.verdict == walked.verdict == "verified"
    assert kept.stats["transitions"] < walked.stats["transitions"]


def test_a_race_behind_many_branches_is_still_found(require_spin):
    src = source(WRITER_THEN_READER.replace("cute.arch.sync_threads()\n", "").format(
        branches=textwrap.indent(MANY_BRANCHES, "")))
    k = check(src)
    assert k.verdict == "counterexample"
    assert {f.code for f in k.findings} == {"CS201"}


# ---------------------------------------------------------------- access-only branches (P10)
ACCESS_ONLY = """\
if warp_idx == 0:
    if mA[0] > 0.0:
        sBuf[lane] = 1.0
    else:
        sTmp[lane] = 1.0
    if mA[1] > 0.0:
        sTmp[lane] = 2.0
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane] + sTmp[lane]
"""


def test_access_only_branch_runs_every_side_without_a_choice(require_spin):
    text = pml(source(ACCESS_ONLY))
    assert ":: true" not in text  # no nondeterministic choice is left
    # Both warps still write both buffers: the writes of every side are in the model.
    assert text.count("a_1 = a_1 |") == 2 and text.count("a_2 = a_2 |") == 3


def test_access_only_branches_keep_the_verdict_and_shrink_the_search(require_spin, monkeypatch):
    together = check(source(ACCESS_ONLY))
    monkeypatch.setattr(promela, "_accesses_only", lambda op, **_: False)
    assert ":: true" in pml(source(ACCESS_ONLY))
    apart = check(source(ACCESS_ONLY))
    assert together.verdict == apart.verdict == "verified"
    assert together.stats["states"] < apart.stats["states"]


def test_a_race_on_one_side_of_an_access_only_branch_is_found(require_spin, monkeypatch):
    # Without the barrier, warp 0's writes on either side race with warp 1's reads.
    racy = ACCESS_ONLY.replace("cute.arch.sync_threads()\n", "")
    together = check(source(racy))
    monkeypatch.setattr(promela, "_accesses_only", lambda op, **_: False)
    apart = check(source(racy))
    assert together.verdict == apart.verdict == "counterexample"
    assert {f.code for f in together.findings} == {f.code for f in apart.findings} == {"CS201"}


def test_a_cta_uniform_branch_is_not_run_both_ways(require_spin):
    # `n > 0` is the same in every warp: warp 0 writing on one side and warp 1 reading on the
    # other never meet, so running both sides would be a false race.
    src = source("""\
        if n > 0:
            if warp_idx == 0:
                sBuf[lane] = 1.0
        else:
            if warp_idx == 1:
                mA[lane] = sBuf[lane]
        """)
    assert "uc[0]" in pml(src)
    assert check(src).verdict == "verified"


# ---------------------------------------------------------------- shared-memory atomics
SMEM_ATOMIC = """\
if lane == 0:
    cute.arch.atomic_add(sBuf.iterator, 1)
cute.arch.sync_threads()
mA[lane] = sBuf[0]
"""


def test_shared_memory_atomics_of_different_warps_do_not_race(require_spin):
    # Lane 0 of every warp adds into one counter: atomics never conflict with each other, and
    # the barrier orders them before every warp's read.
    k = check(source(SMEM_ATOMIC))
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)


def test_a_read_of_an_atomic_counter_without_the_barrier_races(require_spin):
    k = check(source(SMEM_ATOMIC.replace("cute.arch.sync_threads()\n", "")))
    assert k.verdict == "counterexample" and {f.code for f in k.findings} == {"CS201"}


# ---------------------------------------------------------------- long loops that only access memory
LONG_SCAN = """\
if warp_idx == 0:
    sBuf[lane] = 1.0
cute.arch.sync_threads()
if warp_idx == 1:
    acc = 0.0
    for j in cutlass.range(1024):
        acc += sBuf[j % 32]
    mA[lane] = acc
"""


def test_a_long_loop_that_only_reads_is_one_trip_at_an_unknown_index(require_spin):
    # lightmoe's histogram scans a 1024-entry chunk: past the unrolling limit, but nothing in the
    # loop synchronizes, so one trip at an unknown index (touching every element) is the same model.
    k = check(source(LONG_SCAN))
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)
    assert any("1024 trips" in a and "one trip at an unknown index" in a for a in k.assumptions)
    racy = check(source(LONG_SCAN.replace("cute.arch.sync_threads()\n", "")))
    assert racy.verdict == "counterexample" and {f.code for f in racy.findings} == {"CS201"}


def test_a_long_loop_that_synchronizes_stays_unmodeled(require_spin):
    k = check(source("""\
        for j in cutlass.range(1024):
            cute.arch.sync_threads()
        """))
    assert k.verdict == "inconclusive" and any("1024 iterations" in u.why for u in k.unmodeled)


POINTER_SCAN = """\
sp = sBuf.iterator
if warp_idx == 0:
    acc = 0.0
    for t in cutlass.range(1024):
        x = (sp + t % 32).load()
        (sp + t % 32).store(acc)
        acc = acc + x
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""


def test_a_long_loop_through_a_pointer_bound_before_it_is_one_trip(require_spin):
    # cuDNN's block scan: `x = (sp + t).load(); (sp + t).store(acc)` over 1024 entries, `sp`
    # bound before the loop. Methods of that data (and of arithmetic on it) are plain code.
    k = check(source(POINTER_SCAN))
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)
    assert any("1024 trips" in a and "one trip at an unknown index" in a for a in k.assumptions)
    # Without the barrier the scan's writes (one trip at an unknown index stands for every
    # element) meet warp 1's reads: a race, possible because the element is not known.
    racy = check(source(POINTER_SCAN.replace("cute.arch.sync_threads()\n", "")))
    assert racy.verdict == "inconclusive" and {f.code for f in racy.findings} == {"CS201"}
    assert "possible data race" in racy.reason


def test_a_long_loop_calling_a_method_of_a_pipeline_state_stays_unmodeled(require_spin):
    # `state.advance()` once is not `state.advance()` 1024 times: a state is no plain data.
    k = check(source("""\
        state = cutlass.pipeline.make_pipeline_state(cutlass.pipeline.PipelineUserType.Producer, 2)
        for t in cutlass.range(1024):
            state.advance()
        """))
    assert k.verdict == "inconclusive" and any("1024 iterations" in u.why for u in k.unmodeled)


# ---------------------------------------------------------------- past the interpretation budget
UNROLLED_MATH = """\
if warp_idx == 0:
    vals = []
    for i in cutlass.range_constexpr(24):
        vals.append(cute.math.exp2(mA[i], fastmath=True))
    for i in cutlass.range_constexpr(8):
        sBuf[i * 4 + lane % 4] = vals[i]
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""


def test_a_kernel_past_the_budget_is_tried_again_with_compute_loops_as_one_trip(monkeypatch, require_spin):
    # cuDNN's attention kernels unroll register math (exp2 over every pair of a row) past the
    # budget. The second try checks each loop that only computes as one trip at an unknown index.
    from cutespin.frontend import interp
    src = source(UNROLLED_MATH)
    full, compact = interpretation_steps(src, False), interpretation_steps(src, True)
    assert compact < full
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", (full + compact) // 2)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    k = check(src)
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)
    assert any("past the interpretation budget" in a and "one trip at an unknown index" in a
               for a in k.assumptions), k.assumptions
    # The store loop, one trip at an unknown index, still meets warp 1's reads without the barrier.
    racy = check(src.replace("        cute.arch.sync_threads()\n", ""))
    assert racy.verdict != "verified" and {f.code for f in racy.findings} == {"CS201"}, racy.reason


# A runtime loop inside a helper that only computes (frost's steep-decay sums over `range(1, t + 1)`
# for every channel of a tile): past the budget it is one trip too, and no trip count varies it.
RUNTIME_MATH = """\
if warp_idx == 0:
    acc = cutlass.Float32(0.0)
    for i in cutlass.range_constexpr(16):
        acc = acc + interval_sum(sTmp.iterator, i, n)
    sBuf[lane] = acc
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""
INTERVAL_SUM = '''

@cute.jit
def interval_sum(ptr, start, end):
    """Sums a run of the tile (the tcgen05 GEMMs read it later)."""
    total = cutlass.Float32(0.0)
    for t in cutlass.range(start, end, unroll=1):
        v = (ptr + t % 32).load()
        total = total + cutlass.Float32(v)
    return total
'''


def test_past_the_budget_a_runtime_loop_that_only_computes_is_one_trip(monkeypatch, require_spin):
    from cutespin.frontend import interp
    src = source(RUNTIME_MATH).replace("\n\nclass K:", INTERVAL_SUM + "\n\nclass K:")
    full, compact = interpretation_steps(src, False), interpretation_steps(src, True)
    assert compact * 3 < full
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", (full + compact) // 2)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    k = check(src)
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)
    assert any("past the interpretation budget" in a for a in k.assumptions), k.assumptions
    assert not any("`end`" in a for a in k.assumptions), k.assumptions  # no trip count of its own
    racy = check(src.replace("        cute.arch.sync_threads()\n", ""))
    assert racy.verdict != "verified" and {f.code for f in racy.findings} == {"CS201"}, racy.reason


def test_a_kernel_that_fits_the_budget_is_not_compacted(require_spin):
    k = check(source(UNROLLED_MATH))
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)
    assert not any("past the interpretation budget" in a for a in k.assumptions)


def test_the_second_try_keeps_the_first_result_when_it_does_not_fit_either(monkeypatch):
    from cutespin.frontend import interp
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", 3)
    (m,) = build_models(source(UNROLLED_MATH), "k.py", Settings())
    assert any("interpretation steps" in u.why for u in m.unmodeled)
    assert not any("past the interpretation budget" in a for a in m.assumptions)


def test_a_kernel_with_another_unmodeled_construct_is_not_tried_again(monkeypatch):
    # The second try only loses what compute loops compute: it cannot model `mystery_sync(bar)`,
    # so it is not worth the time it takes.
    from cutespin.frontend import interp
    seen = []
    real_init = interp.Registry.__init__

    def init(self, *a, **kw):
        real_init(self, *a, **kw)
        seen.append(self.compact)

    monkeypatch.setattr(interp.Registry, "__init__", init)
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", 60)
    (m,) = build_models(source("mystery_sync(sBuf)\n" + UNROLLED_MATH), "k.py", Settings())
    assert any("interpretation steps" in u.why for u in m.unmodeled) and len(m.unmodeled) > 1, m.unmodeled
    assert True not in seen
    seen.clear()
    build_models(source(UNROLLED_MATH), "k.py", Settings())
    assert True in seen


def test_fastmath_does_not_name_tma():
    # `fastmath=True` contains "tma": a helper passing it was taken to name synchronization, so
    # it was never skipped as plain register math.
    from cutespin.frontend.interp import SYNC_TEXT_RE
    assert not SYNC_TEXT_RE.search("cute.math.exp2(x, fastmath=True)")
    assert all(SYNC_TEXT_RE.search(t) for t in ("tma_atom", "make_tma_tile_atom", "self.use_tma", "tma"))


def test_what_a_long_loop_stores_into_a_dict_is_unknown_after_it():
    # `d["n"]` counted once for 1024 trips would be 1: `> 1` False, the barrier silently gone.
    from cutespin import ir
    m = build_models(source("""\
        d = {"n": 0}
        for j in cutlass.range(1024):
            d["n"] = d["n"] + 1
        if d["n"] > 1:
            cute.arch.sync_threads()
        """), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert any(isinstance(x, ir.NamedBarrier) for p in m.processes for v in p.variants for x in ir.walk(v))


def test_a_long_loop_that_sets_an_attribute_is_not_one_trip():
    # `self.total += 1` once is not 1024 times, and an attribute outlives the loop.
    (m,) = build_models(source("""\
        self.total = 0
        for j in cutlass.range(1024):
            self.total += 1
        """), "k.py", Settings())
    assert any("1024 iterations" in u.why for u in m.unmodeled), m.unmodeled


# ---------------------------------------------------------------- SimpleNamespace bundles
def test_buffers_bundled_in_a_simple_namespace_are_followed(require_spin):
    # flash-attn-4 passes shared-memory views to helpers in a `SimpleNamespace`.
    body = textwrap.indent(textwrap.dedent("""\
        params = SimpleNamespace(buf=sBuf, other=sTmp)
        if warp_idx == 0:
            params.buf[lane] = 1.0
        cute.arch.sync_threads()
        if warp_idx == 1:
            mA[lane] = params.buf[lane]
        """), " " * 8)
    src = "from types import SimpleNamespace\n" + TEMPLATE.format(body=body)
    k = check(src)
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason)
    racy = check(src.replace("        cute.arch.sync_threads()\n", ""))
    assert racy.verdict == "counterexample" and {f.code for f in racy.findings} == {"CS201"}


def test_buffers_handed_on_in_a_dict_call_are_followed(require_spin):
    # cuDNN's sm120 MXFP8 prefill: a helper returns `dict(k_sf_stage=buf, ...)` and the caller
    # passes it on with `**`.
    body = textwrap.indent(textwrap.dedent("""\
        kw = dict(buf=sBuf, scale=2.0)
        if warp_idx == 0:
            fill(**kw)
        cute.arch.sync_threads()
        if warp_idx == 1:
            mA[lane] = kw["buf"][lane]
        """), " " * 8)
    helper = """

@cute.jit
def fill(buf, scale):
    buf[cute.arch.lane_idx()] = scale
"""
    src = TEMPLATE.format(body=body) + helper
    k = check(src)
    assert k.verdict == "verified" and not k.unmodeled, (k.verdict, k.reason, k.unmodeled)
    racy = check(src.replace("        cute.arch.sync_threads()\n", ""))
    assert racy.verdict == "counterexample" and {f.code for f in racy.findings} == {"CS201"}


def test_a_buffer_picked_from_a_tuple_at_an_unknown_index_is_unmodeled_not_dropped():
    # Which of the two buffers `bufs[n % 2]` is depends on a runtime value: its store must not
    # silently vanish from the model (it once did; a loop checked as one trip indexes this way).
    (m,) = build_models(source("""\
        bufs = (sBuf, sTmp)
        bufs[n % 2][lane] = 1.0
        d = {"a": sBuf}
        d[n][lane] = 1.0
        """), "k.py", Settings())
    assert [(u.construct, u.why) for u in m.unmodeled] == [
        ("subscript", "a sequence of buffers or barriers at an index that does not fold"),
        ("subscript", "a dict holding buffers or barriers, at a key that does not fold")]


def test_what_a_long_loop_computes_is_unknown_after_it():
    # One trip stands for 1024: a count the loop accumulates must not fold to one trip's value.
    # Folded to 1, `cnt > 1` would be False and the barrier would silently drop out of the model.
    from cutespin import ir
    m = build_models(source("""\
        cnt = 0
        for j in cutlass.range(1024):
            cnt += 1
        if cnt > 1:
            cute.arch.sync_threads()
        """), "k.py", Settings())[0]
    choices = [o for p in m.processes for v in p.variants for o in ir.walk(v) if isinstance(o, ir.Choice)]
    assert choices and all(any(isinstance(x, ir.NamedBarrier) for alt in c.alternatives for x in alt)
                           for c in choices)
