"""Configurations that give the same model are checked once (`Lowering.config_groups`)."""
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model.promela import lower

from .test_branches import check, source

REPEATED_WRITE = """\
for i in cutlass.range(n):
    if warp_idx == 0:
        sBuf[lane] = 1.0
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""


def test_trip_counts_that_only_repeat_an_access_are_one_configuration(require_spin):
    src = source(REPEATED_WRITE)
    k = build_models(src, "k.py", Settings())[0]
    assert len(k.configs) == 3  # trip counts 1, 2, 3 of `n`
    text = lower(k).text
    assert "cfg ==" not in text and "cfg = " not in text  # one model: no configuration choice left
    assert check(src).verdict == "verified"


def test_configurations_that_differ_stay_apart_and_a_race_in_one_is_found(require_spin):
    # The second trip reads the buffer warp 1 writes without a barrier: only trip counts >= 2
    # race, so the configurations differ and the race is found in one of them.
    src = source("""\
        for i in cutlass.range(n):
            if warp_idx == 0:
                if i == 1:
                    mA[lane] = sBuf[lane]
        if warp_idx == 1:
            sBuf[lane] = 2.0
        """)
    k = build_models(src, "k.py", Settings())[0]
    text = lower(k).text
    assert text.count("cfg = ") == 2  # trip count 1 alone; 2 and 3 read the same way
    res = check(src)
    assert res.verdict == "counterexample" and {f.code for f in res.findings} == {"CS201"}
