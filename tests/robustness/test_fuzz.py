"""The mutation fuzzer (hypothesis plans over the samples and small kernels, `mutate.py`):
thousands of mutants through the front end and the lowering, hundreds end to end through SPIN.
Every outcome is classified; a crash, a hang or a dead worker fails the test with the mutant.

Sizes: CUTESPIN_FUZZ_MUTANTS (default 10000) and CUTESPIN_FUZZ_E2E (default 800, at least 500
of which reach SPIN); CUTESPIN_FUZZ_WORKERS (default: the CPUs), CUTESPIN_FUZZ_SEED. A long run:
`CUTESPIN_FUZZ_MUTANTS=100000 CUTESPIN_FUZZ_E2E=5000 python3 -m pytest tests/robustness/test_fuzz.py`
(docs/robustness.md).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cutespin.config import Settings

from .conftest import env_int
from .fuzz import run_fuzz
from .mutate import CLASSES, OPERATORS, apply_plan, bases, classify_frontend

MUTANTS = env_int("CUTESPIN_FUZZ_MUTANTS", 10_000)
E2E = env_int("CUTESPIN_FUZZ_E2E", 800)
SEED = env_int("CUTESPIN_FUZZ_SEED", 0)
SPIN_RUNS = 500 if E2E >= 800 else E2E // 2  # mutants whose model SPIN really searched


def test_front_end_and_lowering_never_crash(robustness_log):
    rep = run_fuzz("front", MUTANTS, seed=SEED)
    robustness_log(rep.summary())
    robustness_log(rep.slowest_text())
    assert not rep.crashes, rep.crash_text()
    assert rep.mutants >= MUTANTS
    assert set(rep.classes) <= set(CLASSES), rep.classes
    # The mutations reach every stage: parse errors, unmodeled constructs and lowered models.
    if MUTANTS >= 1000:
        for cls in ("syntax-error", "unmodeled", "lowered", "model-limit"):
            assert rep.classes[cls] > 0, cls


def test_end_to_end_through_spin_never_crashes(require_spin, robustness_log):
    rep = run_fuzz("e2e", E2E, seed=SEED)
    robustness_log(rep.summary() + f"; SPIN runs: {rep.classes['spin-run']}")
    robustness_log(rep.slowest_text())
    assert not rep.crashes, rep.crash_text()
    assert rep.mutants >= E2E
    assert rep.classes["spin-run"] >= SPIN_RUNS
    # Every verdict kind shows up, and bounds that were hit are named.
    assert rep.classes["counterexample:spin"] and rep.classes["verified:spin"]
    assert all(k.split(":")[0] in ("syntax-error", "no-kernel", "counterexample", "verified", "inconclusive",
                                   "spin-run") for k in rep.classes), rep.classes


# An in-process property test: hypothesis shrinks a failure to a minimal plan (the bulk runs above
# report failures as they are found, without shrinking).
SOURCES = bases()


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(SOURCES)),
       st.lists(st.tuples(st.integers(0, len(OPERATORS) - 1), st.integers(0, 1 << 12), st.integers(0, 1 << 12)),
                min_size=1, max_size=3))
# Found by this property (2026-11-30): a remote arrive whose peer rank is a per-lane value with an
# unknown lane (sorting ints and unknowns raised), and a multicast consumer count mutant.
@example(base="tma_multicast_cluster_consumer_count.py", plan=[(0, 6, 0)])
@example(base="dsmem_jacobi_exit.py", plan=[(3, 443, 1249)])
def test_mutants_are_classified_property(base, plan):
    classes = classify_frontend(apply_plan(SOURCES[base], plan), Settings(loop_bound=2))
    assert classes and set(classes) <= set(CLASSES)


def test_the_unmutated_bases_lower():
    for name, text in SOURCES.items():
        assert set(classify_frontend(text, Settings())) == {"lowered"}, name


@pytest.mark.parametrize("plan", [[(op, 7, 11)] for op in range(len(OPERATORS))])
def test_every_operator_changes_or_keeps_text_without_error(plan):
    text = SOURCES["small_ring.py"]
    assert isinstance(apply_plan(text, plan), str)
