"""Report formats on real results, fix edits, and `# cutespin: ignore[...]` suppression."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from cutespin import api
from cutespin.cli import main
from cutespin.config import Settings
from cutespin.engine.spin import find_tools
from cutespin.findings import CODES
from cutespin.report import to_json, to_sarif, to_text

from .conftest import SAMPLES

pytestmark = pytest.mark.usefixtures("require_spin")

RACE = SAMPLES / "elected_handoff_race.py"
RACE_LINE = 68


@pytest.fixture(scope="module")
def tool_info(require_spin):
    t = find_tools()
    return {"spin": t.spin_version, "compiler": t.compiler_name}


@pytest.fixture(scope="module")
def race_result(require_spin):
    fr = api.check_source(RACE.read_text(), str(RACE), Settings())
    assert fr.error is None
    return fr


def _ranges(node):
    """Every {"start", "end"} range in a JSON document."""
    if isinstance(node, dict):
        if set(node) == {"start", "end"}:
            yield node
        for v in node.values():
            yield from _ranges(v)
    elif isinstance(node, list):
        for v in node:
            yield from _ranges(v)


def _apply_edits(text: str, edits: list) -> str:
    """Apply JSON edits (1-based line/column, end exclusive) to `text`."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for l in lines:
        starts.append(starts[-1] + len(l))

    def offset(pos):
        return starts[pos["line"] - 1] + pos["column"] - 1

    out = text
    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        a, b = offset(e["range"]["start"]), offset(e["range"]["end"])
        out = out[:a] + e["new_text"] + out[b:]
    return out


# ---------------------------------------------------------------------------------------------
# JSON


def test_to_json_round_trips(race_result, tool_info):
    text = to_json([race_result], [], tool_info)
    doc = json.loads(text)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["files"] == [json.loads(json.dumps(race_result.to_json()))]
    assert doc["tool"]["spin"] == tool_info["spin"]
    assert doc["errors"] == []
    (k,) = doc["files"][0]["kernels"]
    assert k["verdict"] == "counterexample"
    assert [f["code"] for f in k["findings"]] == ["CS201"]


def test_every_range_is_one_based_and_ordered(race_result, tool_info):
    doc = json.loads(to_json([race_result], [], tool_info))
    ranges = list(_ranges(doc))
    assert len(ranges) > 5
    for r in ranges:
        s, e = r["start"], r["end"]
        assert s["line"] >= 1 and s["column"] >= 1 and e["line"] >= 1 and e["column"] >= 1, r
        assert (s["line"], s["column"]) <= (e["line"], e["column"]), r


def test_finding_and_related_ranges_point_inside_the_file(race_result, tool_info):
    src_lines = RACE.read_text().splitlines()
    doc = json.loads(to_json([race_result], [], tool_info))
    (f,) = doc["files"][0]["kernels"][0]["findings"]
    spans = [(str(RACE), f["range"])] + [(r["path"], r["range"]) for r in f["related"]]
    assert len(spans) > 3
    for path, r in spans:
        assert path == str(RACE)
        for pos in (r["start"], r["end"]):
            assert 1 <= pos["line"] <= len(src_lines), r
            assert 1 <= pos["column"] <= len(src_lines[pos["line"] - 1]) + 1, r
        # A range covers code, not indentation or nothing.
        s = r["start"]
        covered = src_lines[s["line"] - 1][s["column"] - 1:]
        assert covered.strip(), r
    # The finding's range is the racy read itself.
    s, e = f["range"]["start"], f["range"]["end"]
    assert s["line"] == e["line"] == RACE_LINE
    assert src_lines[RACE_LINE - 1][s["column"] - 1:e["column"] - 1] == "sRow[self.row_len - 1 - lane]"


def test_fixes_carry_verified_booleans_and_their_edits_fix_the_kernel(race_result, tool_info):
    doc = json.loads(to_json([race_result], [], tool_info))
    (f,) = doc["files"][0]["kernels"][0]["findings"]
    assert f["fixes"]
    assert all(type(fx["verified"]) is bool for fx in f["fixes"])
    verified = [fx for fx in f["fixes"] if fx["verified"]]
    assert verified
    src = RACE.read_text()
    for fx in verified:
        patched = _apply_edits(src, fx["edits"])
        assert patched != src
        fr = api.check_source(patched, str(RACE), Settings(), with_fixes=False)
        assert fr.error is None, fr.error
        assert [k.verdict for k in fr.kernels] == ["verified"], (fx["title"], patched)


# ---------------------------------------------------------------------------------------------
# Text and SARIF


def test_to_text(race_result):
    text = to_text([race_result], [])
    lines = text.splitlines()
    assert lines[0].startswith(f"{RACE}:{RACE_LINE}:30: CS201 data race")
    assert any(re.match(rf"^    {re.escape(str(RACE))}:\d+: step 1: ", l) for l in lines)
    assert lines[-1] == "Checked 1 kernel in 1 file: 1 finding, 0 inconclusive."
    short = to_text([race_result], [], show_trace=False)
    assert " step " not in short
    assert short.splitlines()[0] == lines[0]
    verbose = to_text([race_result], [("x.py", "cannot read: Permission denied")], verbose=True)
    assert "ScaleHandoff.kernel: counterexample" in verbose
    assert "x.py: error: cannot read: Permission denied" in verbose


def test_to_sarif(race_result, tool_info):
    doc = json.loads(to_sarif([race_result], [], tool_info))
    assert doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert set(CODES.values()) <= rule_ids
    (res,) = run["results"]
    assert res["ruleId"] == "CS201"
    region = res["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == RACE_LINE and region["startColumn"] == 30
    assert len(res["relatedLocations"]) == len(race_result.kernels[0].findings[0].related)
    assert all(r["physicalLocation"]["region"]["startLine"] >= 1 for r in res["relatedLocations"])
    assert len(res["fixes"]) == len(race_result.kernels[0].findings[0].fixes)
    failed = json.loads(to_sarif([race_result], [("bad.py", "syntax error")], tool_info))
    assert failed["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_trace_barrier_state_shows_pending_tx_and_phase(race_result):
    (f,) = race_result.kernels[0].findings
    wait = [r.message for r in f.related if "waits on ready" in r.message]
    assert wait
    assert wait[-1].endswith("[pending 1, tx 0, phase 1]"), wait[-1]


# ---------------------------------------------------------------------------------------------
# Suppression


def _with_comment(tmp_path, comment: str):
    p = tmp_path / "handoff.py"
    shutil.copy(RACE, p)
    lines = p.read_text().splitlines(keepends=True)
    assert "sRow[" in lines[RACE_LINE - 1]
    lines[RACE_LINE - 1] = lines[RACE_LINE - 1].rstrip("\n") + comment + "\n"
    p.write_text("".join(lines))
    return p


def _check(path):
    return api.check_source(path.read_text(), str(path), Settings(), with_fixes=False)


@pytest.mark.parametrize("comment", ["  # cutespin: ignore[CS201]", "  # cutespin: ignore",
                                     "  # cutespin: ignore[CS101, CS201]"])
def test_ignore_comment_suppresses_the_finding(tmp_path, comment):
    p = _with_comment(tmp_path, comment)
    (kr,) = _check(p).kernels
    assert kr.findings == []
    assert [f.code for f in kr.suppressed] == ["CS201"]
    assert kr.verdict == "inconclusive"
    assert kr.reason and "suppressed" in kr.reason


def test_ignore_comment_for_another_code_does_not_suppress(tmp_path):
    p = _with_comment(tmp_path, "  # cutespin: ignore[CS101]")
    (kr,) = _check(p).kernels
    assert kr.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in kr.findings] == [("CS201", RACE_LINE)]
    assert kr.suppressed == []


def test_ignore_comment_on_another_line_does_not_suppress(tmp_path):
    p = tmp_path / "handoff.py"
    lines = RACE.read_text().splitlines(keepends=True)
    lines[RACE_LINE - 2] = lines[RACE_LINE - 2].rstrip("\n") + "  # cutespin: ignore[CS201]\n"
    p.write_text("".join(lines))
    (kr,) = _check(p).kernels
    assert kr.verdict == "counterexample"


def test_cli_honours_the_ignore_comment(tmp_path, capsys):
    p = _with_comment(tmp_path, "  # cutespin: ignore[CS201]")
    rc = main(["check", "--no-fixes", "--format", "json", str(p)])
    out = capsys.readouterr().out
    assert rc == 3
    (k,) = json.loads(out)["files"][0]["kernels"]
    assert k["verdict"] == "inconclusive" and k["findings"] == []
