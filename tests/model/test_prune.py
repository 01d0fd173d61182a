"""Visibility variables that are zero in every reachable state are dropped from the Promela text
(model/prune.py): the same states and transitions, fewer bytes per state and fewer statements."""
from pathlib import Path

from cutespin.engine.spin import check_model, find_tools
from cutespin.model.prune import prune_zero_variables

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

MODEL = """\
int mb_p[1];
unsigned a_1 : 4; unsigned c0_1 : 4; unsigned c1_1 : 4; unsigned br0_1 : 4; unsigned bd0_1 : 4; unsigned na0_1 : 4;
proctype P0() {
  atomic { d_step { assert((a_1 & 2 & ~c0_1) == 0); a_1 = a_1 | 1; c1_1 = c1_1 & ~1; br0_1 = br0_1 & ~1; c0_1 = c0_1 | 1 };
  d_step { br0_1 = br0_1 | c0_1; if :: (mb_p[0] == 0) -> bd0_1 = br0_1; br0_1 = 0 :: else -> skip fi } }
}
proctype P1() {
  atomic { d_step { c1_1 = c1_1 | bd0_1; c1_1 = c1_1 | na0_1 }; d_step { assert((a_1 & 1 & ~c1_1) == 0); a_1 = a_1 | 2 } }
}
init { atomic { run P0(); run P1() } }
"""


def test_a_holder_nothing_sets_is_dropped_with_its_statements():
    out = prune_zero_variables(MODEL)
    # na0_1 is never set: its declaration, and P1's `c1_1 = c1_1 | na0_1` (a no-op), go.
    assert "na0_1" not in out
    assert "c1_1 = c1_1 | 0" not in out and "c1_1 = c1_1 | na0_1" not in out
    # Everything on the release path stays: c0_1 -> br0_1 -> bd0_1 -> c1_1.
    for kept in ("br0_1 = br0_1 | c0_1", "bd0_1 = br0_1", "c1_1 = c1_1 | bd0_1", "c1_1 = c1_1 & ~1",
                 "unsigned bd0_1 : 4"):
        assert kept in out, kept
    # Line numbers are the line table's keys: none moves.
    assert out.count("\n") == MODEL.count("\n")


def test_a_read_of_a_dropped_variable_becomes_zero_and_clears_of_it_go():
    model = MODEL.replace("br0_1 = br0_1 | c0_1; ", "")  # the release is gone: br0/bd0 stay 0
    out = prune_zero_variables(model)
    assert "br0_1" not in out and "bd0_1" not in out
    assert "c1_1 = c1_1 | bd0_1" not in out
    # The phase completion keeps its other statements; the clear of br0_1 leaves no empty `;`.
    assert "if :: (mb_p[0] == 0) -> skip :: else -> skip fi" in out
    assert ";;" not in out.replace(" ", "") and "{ ;" not in out


def test_a_chain_through_several_holders_keeps_every_link():
    model = MODEL.replace("c0_1 = c0_1 | 1", "c0_1 = c0_1 | (a_1 & 1)")
    out = prune_zero_variables(model)
    assert "bd0_1 = br0_1" in out and "unsigned c0_1 : 4" in out


def test_pruned_models_have_the_same_states(require_spin, monkeypatch):
    from cutespin import api
    from cutespin.config import Settings
    import cutespin.model.promela as promela

    # The cluster models are over the size past which build leaves a model whole; the pass itself
    # is what is compared here, so the limit is lifted.
    monkeypatch.setattr(promela, "PRUNE_MAX_CHARS", 10**9)
    tools = find_tools()
    compared = smaller = 0
    for name in ("tma_multicast_cluster_ok.py", "tmem_alloc_handoff_ok.py", "gmem_flag_scope.py", "wgmma_release_early.py",
                 "dsmem_jacobi_scope.py"):
        path = SAMPLES / name
        text = path.read_text()
        k = api.check_source(text, str(path), Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]
        assert k.promela is not None
        pruned = k.promela.text
        # The model before pruning, lowered again with the pass switched off.
        real = promela.prune_zero_variables
        promela.prune_zero_variables = lambda t: t
        try:
            whole = promela.lower(api.symmetry.reduce_identical_warps(k.model)).text
        finally:
            promela.prune_zero_variables = real
        assert len(pruned) <= len(whole), name
        smaller += len(pruned) < len(whole)
        a = check_model(whole, tools, timeout=60, depth=100000, memory_mb=1024)
        b = check_model(pruned, tools, timeout=60, depth=100000, memory_mb=1024)
        assert (a.status, a.states, a.transitions, a.error) == (b.status, b.states, b.transitions, b.error), name
        compared += 1
    assert compared == 5 and smaller >= 2  # the cluster and flag models lose holders


def test_models_over_the_size_limit_are_left_whole(monkeypatch):
    import cutespin.model.promela as promela
    from cutespin import api
    from cutespin.config import Settings

    path = SAMPLES / "gmem_flag_scope.py"
    k = api.check_source(path.read_text(), str(path), Settings().with_overrides(timeout=5, verify_fixes=False),
                         with_fixes=False).kernels[0]
    reduced = api.symmetry.reduce_identical_warps(k.model)
    pruned = promela.lower(reduced).text
    monkeypatch.setattr(promela, "PRUNE_MAX_CHARS", 100)
    whole = promela.lower(reduced).text
    assert len(whole) > len(pruned)
