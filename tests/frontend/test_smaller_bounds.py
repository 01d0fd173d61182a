"""A search cut short at the default loop bound is repeated at smaller bounds, and says so
(docs/policies.md P9); a bound the user chose is kept."""
from cutespin import api
from cutespin.config import Settings
from cutespin.engine import spin

from ..conftest import SAMPLES


def _time_bound_above(limit, monkeypatch):
    """pan stops on time whenever a model's loop bound is above `limit`."""
    real = api.check_model
    bounds = []

    def fake(text, tools, **kw):
        bound = fake.current
        bounds.append(bound)
        if bound is not None and bound > limit:
            return spin.RunResult(status="incomplete", incomplete="time", states=1234)
        return real(text, tools, **kw)

    real_run = api.run_kernel

    def run_kernel(k, settings, *a, **kw):
        fake.current = k.bounds.get("loop")
        return real_run(k, settings, *a, **kw)

    monkeypatch.setattr(api, "check_model", fake)
    monkeypatch.setattr(api, "run_kernel", run_kernel)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())  # no result of another test
    return bounds


def test_a_cut_short_default_bound_is_retried_smaller_and_says_so(monkeypatch, require_spin):
    path = SAMPLES / "umma_2cta_pair_ok.py"
    bounds = _time_bound_above(1, monkeypatch)
    res = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False)
    kr = res.kernels[0]
    assert kr.verdict == "verified" and kr.bounds["loop"] == 1, (kr.verdict, kr.reason)
    assert bounds == [3, 1]  # half of 3 is 1: one more search
    assert any("default loop bound 3 the check was cut short (the search hit the time bound" in a
               and "at most 1 trips" in a for a in kr.assumptions)


def test_bound_1_comes_first_and_the_largest_bound_verified_is_the_result(monkeypatch, require_spin):
    path = SAMPLES / "pipeline_async_handles_ok.py"  # 2 stages: default bound 5, half of it 2
    bounds = _time_bound_above(2, monkeypatch)
    kr = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]
    assert bounds == [5, 1, 2]
    assert kr.verdict == "verified" and kr.bounds["loop"] == 2, (kr.verdict, kr.reason)
    assert any("default loop bound 5 the check was cut short" in a and "at most 2 trips" in a for a in kr.assumptions)


def test_bound_1_stands_when_half_the_bound_is_cut_short_too(monkeypatch, require_spin):
    path = SAMPLES / "pipeline_async_handles_ok.py"
    bounds = _time_bound_above(1, monkeypatch)
    kr = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]
    assert bounds == [5, 1, 2]
    assert kr.verdict == "verified" and kr.bounds["loop"] == 1, (kr.verdict, kr.reason)


def test_a_counterexample_at_bound_1_ends_the_retries(monkeypatch, require_spin):
    path = SAMPLES / "pipeline_async_handles_race.py"
    bounds = _time_bound_above(1, monkeypatch)
    kr = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]
    assert bounds == [5, 1]
    assert kr.verdict == "counterexample" and kr.bounds["loop"] == 1, (kr.verdict, kr.reason)


def test_a_chosen_loop_bound_is_kept(monkeypatch, require_spin):
    path = SAMPLES / "umma_2cta_pair_ok.py"
    bounds = _time_bound_above(1, monkeypatch)
    res = api.check_source(path.read_text(), str(path), Settings(loop_bound=3), with_fixes=False)
    kr = res.kernels[0]
    assert kr.verdict == "inconclusive" and bounds == [3]


def _steps_needed(path, bound):
    """The interpretation steps the whole kernel takes at a loop bound."""
    from cutespin.frontend import build_models
    from cutespin.frontend import interp
    from cutespin.frontend.interp import Registry
    seen = []
    real_init = Registry.__init__

    def init(self, *a, **kw):
        real_init(self, *a, **kw)
        seen.append(self)

    try:
        Registry.__init__ = init
        build_models(path.read_text(), str(path), Settings(loop_bound=bound))
    finally:
        Registry.__init__ = real_init
    return max(r.steps for r in seen), interp


def test_a_kernel_over_the_interpretation_budget_is_checked_at_a_smaller_bound(monkeypatch, require_spin):
    path = SAMPLES / "umma_2cta_pair_ok.py"
    at_one, interp = _steps_needed(path, 1)
    at_three, _ = _steps_needed(path, 3)
    assert at_one < at_three
    # A budget the default bound (3) exceeds and bound 1 fits in.
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", (at_one + at_three) // 2)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    kr = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and kr.bounds["loop"] == 1 and not kr.unmodeled, (kr.verdict, kr.reason)
    assert any("default loop bound 3 the check was cut short (the kernel is not fully modeled" in a
               and "interpretation steps" in a
               and "at most 1 trips" in a for a in kr.assumptions)
    # A bound the user chose is kept: over the budget, the kernel stays inconclusive.
    chosen = api.check_source(path.read_text(), str(path), Settings(loop_bound=3), with_fixes=False).kernels[0]
    assert chosen.verdict == "inconclusive" and any("interpretation steps" in u.why for u in chosen.unmodeled)


def test_over_the_budget_a_complete_model_at_a_smaller_bound_is_the_result_without_a_verdict(
        monkeypatch, require_spin):
    """The front end ran out of budget at the default bound, and bound 1's complete model is cut
    short by the search's time bound: the result is that model, inconclusive for the search's
    reason (not the budget a smaller bound relieved), and the first retry has the whole time
    bound but a second search's share (no search ran at the default bound)."""
    path = SAMPLES / "umma_2cta_pair_ok.py"
    at_one, interp = _steps_needed(path, 1)
    at_three, _ = _steps_needed(path, 3)
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", (at_one + at_three) // 2)
    bounds = _time_bound_above(0, monkeypatch)
    timeouts = []
    real_run = api.run_kernel

    def run_kernel(k, settings, *a, **kw):
        timeouts.append(settings.timeout)
        return real_run(k, settings, *a, **kw)

    monkeypatch.setattr(api, "run_kernel", run_kernel)
    kr = api.check_source(path.read_text(), str(path), Settings(timeout=10), with_fixes=False).kernels[0]
    assert bounds == [1] and timeouts == [10 * (api.FIRST_SEARCH_SHARE + api.RETRY_SEARCH_SHARE)]
    assert kr.verdict == "inconclusive" and kr.bounds["loop"] == 1 and not kr.unmodeled, (kr.verdict, kr.reason)
    assert "time bound" in kr.reason
    assert any("default loop bound 3 the check was cut short (the kernel is not fully modeled" in a
               and "this result is for runtime loops of at most 1 trips" in a for a in kr.assumptions)
    # A search cut short at the default bound keeps its own (complete) model when no smaller
    # bound reaches a verdict either.
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", 10 ** 9)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    bounds.clear()
    kr = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]
    assert bounds == [3, 1] and kr.verdict == "inconclusive" and kr.bounds["loop"] == 3


def test_only_budgets_and_what_they_left_unknown_are_worth_a_smaller_bound():
    from cutespin import ir
    from cutespin.frontend import build_models
    path = SAMPLES / "umma_2cta_pair_ok.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    steps = ir.Unmodeled(1, "kernel body", "the unrolled kernel needs more than 60000 interpretation steps")
    state = ir.Unmodeled(2, "pipeline.consumer_wait", "the pipeline state is not known")
    other = ir.Unmodeled(3, "cute.arch.mapa", "synchronization primitive not modeled")
    per_warp = ir.Unmodeled(4, "pipeline.producer_acquire", "the pipeline state is not known: advanced differently "
                            "on the sides of the runtime condition at line 9 (a condition that may differ between "
                            "warps)")
    k.unmodeled = [steps, state]
    assert "interpretation steps" in api._budget_reasons(k)
    for extra in (other, per_warp):
        k.unmodeled = [steps, state, extra]
        assert api._budget_reasons(k) is None, extra.why
    k.unmodeled = [state]  # a consequence alone: no budget to relieve
    assert api._budget_reasons(k) is None


def test_a_model_over_the_size_limit_is_checked_at_a_smaller_bound(monkeypatch, require_spin):
    from cutespin.frontend import build_models
    from cutespin.model import promela
    path = SAMPLES / "umma_2cta_pair_ok.py"
    text = path.read_text()
    sizes = {b: len(promela.lower(build_models(text, str(path), Settings(loop_bound=b))[0]).text.splitlines())
             for b in (1, 3)}
    assert sizes[1] < sizes[3]
    monkeypatch.setattr(promela, "MAX_MODEL_LINES", (sizes[1] + sizes[3]) // 2)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    # Its configuration groups one model each would fit (tests/model/test_config_split.py): this
    # test is about the fallback when they do not.
    monkeypatch.setattr(api, "_groups_to_split", lambda k: None)
    kr = api.check_source(text, str(path), Settings(), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and kr.bounds["loop"] == 1, (kr.verdict, kr.reason)
    assert any("cut short (model too large" in a and "at most 1 trips" in a for a in kr.assumptions)
    chosen = api.check_source(text, str(path), Settings(loop_bound=3), with_fixes=False).kernels[0]
    assert chosen.verdict == "inconclusive" and chosen.reason.startswith("model too large")


FLAG_KERNEL = """\
flag = mFlag.iterator
bidx, _, _ = cute.arch.block_idx()
for i in cutlass.range_constexpr(20):
    mA[i] = mA[i + 1]
if bidx == 0:
    cute.arch.atomic_add(flag, 1, sem="release", scope="gpu")
else:
    while cute.arch.load(flag, cutlass.Int32, sem="acquire", scope="gpu") < 1:
        pass
"""


def test_the_budget_running_out_when_a_flag_protocol_adds_ctas_is_unmodeled_not_a_crash(monkeypatch):
    # The first run models one CTA; a GMEM flag protocol makes it run again with two, and the
    # budget can run out there (cutlass's fmha.py in the twelfth session's corpus run): that is
    # the kernel body unmodeled, never an exception out of the front end.
    from cutespin.frontend import build_models, interp
    from cutespin.frontend.interp import Registry
    from tests.kernels import kernel_source

    src = kernel_source(FLAG_KERNEL, grid="(2, 1, 1)").replace("def kernel(self, mA: cute.Tensor):",
                                             "def kernel(self, mA: cute.Tensor, mFlag: cute.Tensor):")
    seen = []
    real_init = Registry.__init__

    def init(self, *a, **kw):
        # Without the second try that checks the 20-trip loop as one trip (it would fit).
        real_init(self, *a, **{**kw, "compact": False})
        seen.append(self)

    monkeypatch.setattr(Registry, "__init__", init)
    (k,) = build_models(src, "k.py", Settings())
    assert k.ctas == 2 and not k.unmodeled
    # The 1-CTA runs (the first, and its re-run once the kernel's GMEM writes are known) take
    # half of the steps, the 2-CTA run the other half: a budget of three quarters runs out there.
    monkeypatch.setattr(interp, "MAX_KERNEL_STEPS", max(r.steps for r in seen) * 3 // 4)
    (k,) = build_models(src, "k.py", Settings())
    assert any("interpretation steps" in u.why for u in k.unmodeled), k.unmodeled


def _search_time_bounds(monkeypatch) -> list:
    timeouts = []
    real_run = api.run_kernel

    def run_kernel(k, settings, *a, **kw):
        timeouts.append((k.bounds.get("loop"), settings.timeout))
        return real_run(k, settings, *a, **kw)

    monkeypatch.setattr(api, "run_kernel", run_kernel)
    return timeouts


def test_bound_1_after_a_cut_short_default_search_has_the_rest_of_the_time_bound(monkeypatch, require_spin):
    """Cut short at bound 1 too, the kernel has used its whole time bound: bound 1's search was
    not cut at a share that left the rest unused."""
    path = SAMPLES / "pipeline_async_handles_ok.py"
    bounds = _time_bound_above(0, monkeypatch)
    timeouts = _search_time_bounds(monkeypatch)
    kr = api.check_source(path.read_text(), str(path), Settings(timeout=10), with_fixes=False).kernels[0]
    assert bounds == [5, 1] and kr.verdict == "inconclusive"
    assert timeouts == [(5, 10 * api.FIRST_SEARCH_SHARE), (1, 10 * (1 - api.FIRST_SEARCH_SHARE))]


def test_half_the_bound_gets_what_bound_1_left(monkeypatch, require_spin):
    path = SAMPLES / "pipeline_async_handles_ok.py"
    _time_bound_above(2, monkeypatch)
    timeouts = _search_time_bounds(monkeypatch)
    kr = api.check_source(path.read_text(), str(path), Settings(timeout=10), with_fixes=False).kernels[0]
    assert kr.verdict == "verified" and kr.bounds["loop"] == 2
    assert [b for b, _ in timeouts] == [5, 1, 2]
    (_, first), (_, one), (_, half) = timeouts
    assert first + one == 10 and 10 * api.RETRY_SEARCH_SHARE <= half <= one
