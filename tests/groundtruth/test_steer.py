"""The steering generator (groundtruth/steer.py) on the CPU: which trails it steers, where the
delays go, and that a steered copy is the sample plus delay blocks and nothing else."""
import ast
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, SAMPLES

_spec = importlib.util.spec_from_file_location("gt_steer", ROOT / "groundtruth" / "steer.py")
steer = importlib.util.module_from_spec(_spec)
sys.modules["gt_steer"] = steer  # dataclasses look their module up
_spec.loader.exec_module(steer)


def plan_of(name):
    plans = steer.plans_for(SAMPLES / f"{name}.py")
    assert len(plans) == 1, plans
    return plans[0]


def test_deadlock_delays_the_blocked_role_before_its_wait(require_spin):
    p = plan_of("tma_ring_wrap_parity")
    assert p.kind == "deadlock" and p.reproducible and p.expect == "hang"
    assert [(d.warp, d.line, d.cta) for d in p.delays] == [(0, 95, None)]


def test_deadlock_with_several_blocked_roles(require_spin):
    p = plan_of("named_barrier_mismatch")
    assert p.reproducible
    assert sorted((d.warp, d.line) for d in p.delays) == [(1, 70), (2, 70), (3, 70)]


def test_write_after_read_race_delays_the_reader(require_spin):
    p = plan_of("wrong_arrive_count")
    assert p.kind == "race" and p.reproducible
    assert [(d.warp, d.line) for d in p.delays] == [(1, 110)]
    assert steer.SHORT_DELAY_NS in p.delays_ns


def test_lane_level_release_race_is_not_steerable(require_spin):
    p = plan_of("elected_handoff_race")
    assert not p.reproducible and not p.delays
    assert "line 64" in p.reason and "racecheck" in p.reason


def test_exit_delays_the_peer_access_in_its_cta(require_spin):
    p = plan_of("cluster_exit_peer_arrive")
    assert p.reproducible
    assert [(d.cta, d.warp, d.line) for d in p.delays] == [(1, 0, 65)]
    assert p.cta_expr == "cute.arch.block_idx_in_cluster()"


@pytest.mark.parametrize("name", ["tma_store_no_fence", "gmem_flag_scope"])
def test_visibility_findings_are_listed_with_a_reason(name, require_spin):
    p = plan_of(name)
    assert not p.reproducible and "blind spot" in p.reason


def test_verified_sample_has_no_plan(require_spin):
    assert steer.plans_for(SAMPLES / "tma_ring_ok.py") == []


def test_steered_copy_is_the_sample_plus_delays(require_spin):
    src = (SAMPLES / "cluster_exit_peer_arrive.py").read_text()
    p = plan_of("cluster_exit_peer_arrive")
    out = steer.steer_source(src, p, "samples/cluster_exit_peer_arrive.py")
    ast.parse(out)
    old, new = src.splitlines(), out.splitlines()
    assert new[0].startswith("import os as _gt_os; _GT_DELAY_NS =")
    # Every other line of the sample survives, in order; what was added is the guarded spin.
    added = list(new[1:])
    for ln in old[1:]:
        i = added.index(ln)
        del added[i]
    body = [a.strip() for a in added]
    assert body[0].startswith("# cutespin-steer:")
    assert body[1:] == ["if cute.arch.block_idx_in_cluster() == 1:", "if cute.arch.warp_idx() == 0:",
                        "_gt_t0 = cute.arch.globaltimer()",
                        "while cute.arch.globaltimer() - _gt_t0 < _GT_DELAY_NS:", "pass"]
    # The delay sits right before the DSMEM read of line 65, at its indentation.
    at = new.index(old[64])
    assert new[at - 1].strip() == "pass" and new[at - 5].startswith(old[64][: len(old[64]) - len(old[64].lstrip())] + "if ")


def test_generate_writes_copies_and_plan(tmp_path, require_spin):
    plans = steer.generate([SAMPLES / "tma_bytes_never_complete.py", SAMPLES / "tma_store_ok.py"], tmp_path)
    data = json.loads((tmp_path / "plan.json").read_text())
    assert data["verdicts"]["tma_store_ok"]["verdict"] == "verified"
    assert data["verdicts"]["tma_bytes_never_complete"]["kinds"] == ["deadlock"]
    assert [p["variant"] for p in data["plans"]] == ["tma_bytes_never_complete__steer"]
    assert (tmp_path / "tma_bytes_never_complete__steer.py").exists()
    assert len(plans) == 1
