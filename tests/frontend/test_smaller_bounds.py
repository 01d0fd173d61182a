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
    assert any("default loop bound 3 was cut short" in a and "at most 1 trips" in a for a in kr.assumptions)


def test_a_chosen_loop_bound_is_kept(monkeypatch, require_spin):
    path = SAMPLES / "umma_2cta_pair_ok.py"
    bounds = _time_bound_above(1, monkeypatch)
    res = api.check_source(path.read_text(), str(path), Settings(loop_bound=3), with_fixes=False)
    kr = res.kernels[0]
    assert kr.verdict == "inconclusive" and bounds == [3]
