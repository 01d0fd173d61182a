"""A kernel whose model is over `api.SLICE_STATEMENTS` is checked a group of tracked regions at a
time (`promela.lower(k, regions)`): each model searches the same interleavings and tracks races on
its regions only, so together they give the verdict, findings and traces of the whole model."""
import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model import promela, symmetry

from ..conftest import SAMPLES

SLICE_NOTE = "a group of buffers at a time"


def _kernel(name: str):
    path = SAMPLES / name
    return symmetry.reduce_identical_warps(build_models(path.read_text(), str(path), Settings())[0])


def _check(name: str, monkeypatch, cap: int):
    monkeypatch.setattr(api, "CACHE", api._ResultCache())
    monkeypatch.setattr(api, "SLICE_STATEMENTS", cap)
    path = SAMPLES / name
    # A generous time bound: cut to one region per model, a kernel pays a `spin -a` and a build of
    # pan per region and configuration group, and the suite may share the machine.
    return api.check_source(path.read_text(), str(path), Settings(timeout=300), with_fixes=False).kernels[0]


def _found(kr):
    # Not the trail: a slice's search prunes states that differ only in another region's bits,
    # so its depth-first search may reach the same violation along another interleaving.
    return [(f.code, f.span.line) for f in kr.findings]


def _statements(k, regions=None) -> int:
    lowering = promela.Lowering(k, regions)
    lowering.build()
    return lowering.statements


def test_a_model_of_some_regions_tracks_races_on_those_only():
    k = _kernel("tmem_load_release_before_fence.py")
    tracked = promela.tracked_region_weights(k)
    assert len(tracked) == 3
    first = min(tracked)
    part = promela.lower(k, frozenset([first]))
    assert [r.index for r in part.tracked] == [first]
    assert f"a_{first} " in part.text or f"a_{first};" in part.text
    assert not any(f"a_{r} " in part.text or f"a_{r};" in part.text for r in tracked if r != first)
    # The kernel's control is in every part: the same barriers, waits and processes.
    whole = promela.lower(k)
    assert part.text.count("mb_ph[") == whole.text.count("mb_ph[")
    assert _statements(k, frozenset([first])) < _statements(k)


def test_a_statement_cap_stops_the_lowering():
    k = _kernel("tmem_load_release_before_fence.py")
    with pytest.raises(promela.OverStatementCap):
        promela.lower(k, statement_cap=_statements(k) - 1)
    promela.lower(k, statement_cap=_statements(k))


@pytest.mark.parametrize("name", ["tmem_load_release_before_fence.py", "cp_async_no_barrier.py",
                                  "dsmem_jacobi_scope.py", "tma_ring_wrap_parity.py", "wgmma_wait_ok.py",
                                  "dsmem_jacobi_ok.py", "tma_multicast_cluster_ok.py"])
def test_slices_give_the_verdict_and_findings_of_the_whole_model(name, monkeypatch, require_spin):
    whole = _check(name, monkeypatch, cap=10**9)
    # A cap below any model: every region is a model of its own (a single region's model has
    # the size limits only).
    sliced = _check(name, monkeypatch, cap=1)
    assert not any(SLICE_NOTE in a for a in whole.assumptions)
    assert any(SLICE_NOTE in a for a in sliced.assumptions), sliced.assumptions
    assert (sliced.verdict, _found(sliced)) == (whole.verdict, _found(whole))


def test_a_race_on_a_region_of_a_later_slice_is_found(monkeypatch, require_spin):
    # The heaviest region goes first; this kernel's race is on another one, so the search has
    # to go on past a first slice that passes.
    k = _kernel("umma_mma_before_wait.py")
    weights = promela.tracked_region_weights(k)
    heaviest = max(weights, key=lambda r: (weights[r], -r))
    sliced = _check("umma_mma_before_wait.py", monkeypatch, cap=1)
    assert sliced.verdict == "counterexample" and _found(sliced) == [("CS201", 88)]
    assert sliced.findings[0].data["region"] != heaviest
    note = next(a for a in sliced.assumptions if SLICE_NOTE in a)
    assert "(2 models searched, each over the same interleavings and tracking some of the " in note, note


def test_slices_stop_halving_where_a_group_fits():
    # A cap between the control alone and the whole model: the regions go in halves, not one by one.
    k = ir.restrict_configs(_kernel("dsmem_jacobi_ok.py"), [0])
    weights = promela.tracked_region_weights(k)
    assert len(weights) >= 4
    sliced: dict = {}
    models = list(api._models(k, sliced, cap=(_statements(k, frozenset()) + _statements(k)) // 2))
    assert len(models) == len(sliced["models"]) == 2
    first, second = sliced["models"]
    assert first | second == set(weights) == sliced["all"] and not first & second
    assert [set(r.index for r in pm.tracked) for pm in models] == [first, second]


def test_a_model_within_the_cap_is_not_sliced():
    k = _kernel("dsmem_jacobi_ok.py")
    sliced: dict = {}
    models = list(api._models(k, sliced))
    assert len(models) == 1 and not sliced
    assert {r.index for r in models[0].tracked} == set(promela.tracked_region_weights(k))


def test_a_single_region_over_the_cap_is_one_model_within_the_size_limits():
    k = _kernel("tma_store_ring_reuse_race.py")
    sliced: dict = {}
    models = list(api._models(k, sliced, cap=1))
    assert [set(r.index for r in pm.tracked) for pm in models] == [{1}, {3}]


def test_a_whole_model_found_over_the_cap_is_not_lowered_again(monkeypatch, require_spin):
    # run_kernel lowers the whole kernel once (it stops at the cap), then only the slices.
    real, whole = promela.lower, []

    def lower(k, regions=None, statement_cap=None):
        if regions is None:
            whole.append(len(k.configs))
        return real(k, regions, statement_cap)

    monkeypatch.setattr(api, "lower", lower)
    kr = _check("tma_store_ring_reuse_race.py", monkeypatch, cap=1)
    assert any(SLICE_NOTE in a for a in kr.assumptions), kr.assumptions
    assert whole == [1], whole
