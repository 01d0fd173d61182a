"""A kernel whose whole model is too large is checked one configuration group at a time
(`api.SPLIT_MODEL_CHARS`, `ir.restrict_configs`): the same verdicts, findings and traces."""
import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model import promela

from ..conftest import SAMPLES

SPLIT_NOTE = "models, one per group of configurations"


def _check(name: str, monkeypatch, split: bool):
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    monkeypatch.setattr(api, "SPLIT_MODEL_CHARS", 0 if split else 10**12)
    path = SAMPLES / name
    return api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]


def _found(kr):
    return [(f.code, f.span.line) for f in kr.findings]


@pytest.mark.parametrize("name", ["pipeline_uniform_condition_skip_deadlock.py", "tma_ring_wrap_parity.py",
                                  "uniform_branch_per_iteration_race.py", "pipeline_uniform_condition_ok.py"])
def test_parts_give_the_verdict_and_findings_of_the_whole_model(name, monkeypatch, require_spin):
    whole = _check(name, monkeypatch, split=False)
    parts = _check(name, monkeypatch, split=True)
    assert not any(SPLIT_NOTE in a for a in whole.assumptions)
    assert any(SPLIT_NOTE in a for a in parts.assumptions), parts.assumptions
    assert (parts.verdict, _found(parts)) == (whole.verdict, _found(whole))
    assert parts.stats["states"] >= whole.stats["states"] > 0  # every part's states are counted


def test_a_part_trace_says_which_configuration_it_is(monkeypatch, require_spin):
    # The deadlock needs `has_bias` false: with one configuration per model, the launch step that
    # chose it among several is gone, and the part's own model still names it.
    kr = _check("pipeline_uniform_condition_skip_deadlock.py", monkeypatch, split=True)
    first = kr.findings[0].steps[0].what
    assert first.startswith("takes the configuration") and "`has_bias != 0` (line 62) = False" in first


def test_a_part_holds_its_configurations_only():
    path = SAMPLES / "uniform_branch_per_iteration_race.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    assert len(k.configs) == 3
    part = ir.restrict_configs(k, [1])
    assert part.configs == [k.configs[1]]
    assert all(p.variants == [q.variants[1]] for p, q in zip(part.processes, k.processes))
    assert "cfg ==" not in promela.lower(part).text  # one model: no choice left


def test_a_whole_model_over_the_size_limit_is_checked_in_parts_at_the_default_bound(monkeypatch, require_spin):
    path = SAMPLES / "uniform_branch_per_iteration_race.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    whole = len(promela.lower(k).text.splitlines())
    largest = max(len(promela.lower(ir.restrict_configs(k, [i])).text.splitlines()) for i in range(3))
    assert largest < whole
    monkeypatch.setattr(promela, "MAX_MODEL_LINES", (largest + whole) // 2)
    kr = _check("uniform_branch_per_iteration_race.py", monkeypatch, split=False)
    assert kr.verdict == "counterexample" and kr.bounds["loop"] == 3
    assert _found(kr) == [("CS201", 49)]


def test_a_part_over_the_size_limit_is_inconclusive_and_names_its_configuration(monkeypatch, require_spin):
    path = SAMPLES / "uniform_branch_per_iteration_race.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    smallest = min(len(promela.lower(ir.restrict_configs(k, [i])).text.splitlines()) for i in range(3))
    monkeypatch.setattr(promela, "MAX_MODEL_LINES", smallest - 1)
    kr = api.run_kernel(k, Settings(), api.find_tools("spin", None))
    assert kr.verdict == "inconclusive" and kr.cut_short == "size"
    assert kr.reason.startswith("model too large") and "in the configuration" in kr.reason


def test_what_any_part_could_not_express_keeps_the_verdict_from_verified(monkeypatch, require_spin):
    # A lowering note (something the Promela could not express) makes a kernel inconclusive.
    # Checked in parts, the note of a later part counts too, not only the model kept for display.
    real = promela.lower
    calls = []

    def lower(k, regions=None, statement_cap=None):
        calls.append(len(k.configs))
        if len(calls) == 1:
            raise promela.ModelTooLarge("the whole model")
        pm = real(k, regions, statement_cap)
        if len(calls) == 3:
            pm.notes.append("barrier b: something the lowering could not express")
        return pm

    monkeypatch.setattr(api, "lower", lower)
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    path = SAMPLES / "pipeline_uniform_condition_ok.py"
    kr = api.check_source(path.read_text(), str(path), Settings(), with_fixes=False).kernels[0]
    assert len(calls) > 3
    assert kr.verdict == "inconclusive" and "the lowering could not express" in kr.reason, (kr.verdict, kr.reason)
