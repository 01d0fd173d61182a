"""`cutespin check`: exit codes, the three output formats, --emit-promela, --baseline, bounds."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutespin.cli import main
from cutespin.engine.spin import check_model, find_tools
from cutespin.findings import CODES

from .conftest import ROOT, SAMPLES

pytestmark = pytest.mark.usefixtures("require_spin")

RACE = SAMPLES / "elected_handoff_race.py"  # CS201 at 68:30
OK = SAMPLES / "tma_store_ok.py"
DEADLOCK = SAMPLES / "named_barrier_mismatch.py"  # CS101 at line 70
RING_OK = SAMPLES / "tma_ring_ok.py"

INCONCLUSIVE_SRC = textwrap.dedent("""\
    import cutlass
    import cutlass.cute as cute
    import cutlass.pipeline


    class PipeCopy:
        @cute.jit
        def __call__(self, mA: cute.Tensor):
            self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

        @cute.kernel
        def kernel(self, mA: cute.Tensor):
            smem = cutlass.utils.SmemAllocator()
            bars = smem.allocate_array(cutlass.Int64, num_elems=4)
            pipeline = cutlass.pipeline.PipelineTmaAsync.create(
                barrier_storage=bars, num_stages=2, producer_group=None, consumer_group=None, tx_count=128
            )
            cute.arch.sync_threads()
""")
INCONCLUSIVE_KERNEL_LINE = 12
INCONCLUSIVE_CALL_LINE = 15

SYNTAX_ERROR_SRC = textwrap.dedent("""\
    import cutlass.cute as cute


    class Broken:
        @cute.kernel
        def kernel(self:
            pass
""")


@pytest.fixture
def inconclusive_file(tmp_path):
    p = tmp_path / "pipe_copy.py"
    p.write_text(INCONCLUSIVE_SRC)
    return p


@pytest.fixture
def syntax_error_file(tmp_path):
    p = tmp_path / "broken_kernel.py"
    p.write_text(SYNTAX_ERROR_SRC)
    return p


def run_cli(capsys, *args):
    rc = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


# ---------------------------------------------------------------------------------------------
# Exit codes


def test_exit_0_for_a_verified_sample(capsys):
    rc, out, err = run_cli(capsys, OK)
    assert rc == 0, out + err
    assert re.search(r"ScaleTmaStore\.kernel: verified", out)
    assert "CS" not in out


def test_exit_1_for_a_buggy_sample(capsys):
    rc, out, _ = run_cli(capsys, "--no-fixes", RACE)
    assert rc == 1
    assert f"{RACE}:68:30: CS201 " in out


def test_exit_1_for_a_deadlock(capsys):
    rc, out, _ = run_cli(capsys, "--no-fixes", DEADLOCK)
    assert rc == 1
    assert re.search(rf"^{re.escape(str(DEADLOCK))}:70:\d+: CS101 deadlock", out, re.M)


def test_exit_3_for_an_unmodeled_pipeline(capsys, inconclusive_file):
    rc, out, _ = run_cli(capsys, inconclusive_file)
    assert rc == 3, out
    assert re.search(rf"^{re.escape(str(inconclusive_file))}:{INCONCLUSIVE_CALL_LINE}:1: CS901 unmodeled", out, re.M)
    assert re.search(rf"^{re.escape(str(inconclusive_file))}:{INCONCLUSIVE_KERNEL_LINE}:1: CS902 "
                     r"PipeCopy\.kernel: inconclusive", out, re.M)
    assert "verified" not in out


def test_allow_inconclusive_exits_0(capsys, inconclusive_file):
    rc, out, _ = run_cli(capsys, "--allow-inconclusive", inconclusive_file)
    assert rc == 0
    assert "CS902" in out  # still reported, only the exit code changes


def test_allow_inconclusive_does_not_hide_a_counterexample(capsys, inconclusive_file):
    rc, _, _ = run_cli(capsys, "--allow-inconclusive", "--no-fixes", inconclusive_file, RACE)
    assert rc == 1


def test_exit_2_for_a_missing_path(capsys, tmp_path):
    missing = tmp_path / "no_such_kernel.py"
    rc, out, err = run_cli(capsys, OK, missing)
    assert rc == 2
    assert str(missing) in err
    assert out == ""


def test_exit_2_for_a_file_that_does_not_parse(capsys, syntax_error_file):
    rc, out, _ = run_cli(capsys, syntax_error_file)
    assert rc == 2
    assert re.search(rf"^{re.escape(str(syntax_error_file))}: error: .*syntax error", out, re.M)


def test_exit_2_when_spin_is_missing_in_process(capsys):
    rc, out, err = run_cli(capsys, "--spin", "/nonexistent/spin", OK)
    assert rc == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "apt-get install spin" in lines[0]
    assert "Traceback" not in err


def test_subprocess_exit_codes_and_missing_spin(tmp_path):
    env = dict(os.environ)
    ok = subprocess.run([sys.executable, "-m", "cutespin", "check", str(OK)], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "verified" in ok.stdout

    # PATH holds only python3: no spin, no compiler.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env["PATH"] = str(bindir)
    r = subprocess.run([sys.executable, "-m", "cutespin", "check", str(RACE)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("cutespin: error:")
    assert "apt-get install spin" in lines[0]


# ---------------------------------------------------------------------------------------------
# Text format

STEP_LINE = re.compile(r"^    (?P<path>\S+):(?P<line>\d+): step (?P<n>\d+): (?P<what>.+)$")


def test_text_format_finding_and_interleaving(capsys):
    rc, out, _ = run_cli(capsys, RACE)
    assert rc == 1
    lines = out.splitlines()
    head = [i for i, l in enumerate(lines) if re.match(r"^\S+:\d+:\d+: CS\d{3} ", l)]
    assert len(head) == 1
    first = lines[head[0]]
    assert first.startswith(f"{RACE}:68:30: CS201 data race: warp 1 reads sRow")
    steps = [STEP_LINE.match(l) for l in lines[head[0] + 1:] if STEP_LINE.match(l)]
    assert len(steps) >= 3
    assert all(m.group("path") == str(RACE) for m in steps)
    assert [int(m.group("n")) for m in steps] == list(range(1, len(steps) + 1))
    seen = [(int(m.group("line")), m.group("what")) for m in steps]

    def step_no(line, text):
        hits = [i for i, (l, what) in enumerate(seen) if l == line and text in what]
        assert hits, (line, text, seen)
        return hits[0]

    # The interleaving, in order: the unordered write, the elected arrive, the wait, the read.
    assert step_no(62, "writes sRow") < step_no(64, "arrives on ready") < step_no(67, "waits on ready")
    assert int(steps[-1].group("line")) == 68
    fixes = [l for l in lines if l.startswith("    fix (")]
    assert fixes and all(re.match(r"^    fix \((verified|not verified)\): \S", l) for l in fixes)
    assert lines[-1] == "Checked 1 kernel in 1 file: 1 finding, 0 inconclusive."


def test_no_trace_drops_the_steps(capsys):
    rc, out, _ = run_cli(capsys, "--no-trace", RACE)
    assert rc == 1
    assert f"{RACE}:68:30: CS201 " in out
    assert not [l for l in out.splitlines() if STEP_LINE.match(l)]
    assert " step " not in out
    assert "    fix (verified): " in out


# ---------------------------------------------------------------------------------------------
# JSON contract

KERNEL_KEYS = {"name", "qualname", "line", "verdict", "reason", "bounds", "assumptions", "findings", "unmodeled",
               "stats", "depends_on"}
BOUNDS_KEYS = {"loop", "stages", "cluster", "depth", "states", "seconds"}
STATS_KEYS = {"states", "transitions", "seconds", "compiler"}
FINDING_KEYS = {"code", "kind", "severity", "message", "path", "range", "related", "fixes"}


def check_range(r, n_lines=None):
    assert set(r) == {"start", "end"}
    for end in ("start", "end"):
        assert set(r[end]) == {"line", "column"}
        assert isinstance(r[end]["line"], int) and isinstance(r[end]["column"], int)
        assert r[end]["line"] >= 1 and r[end]["column"] >= 1
        if n_lines is not None:
            assert r[end]["line"] <= n_lines
    assert (r["start"]["line"], r["start"]["column"]) <= (r["end"]["line"], r["end"]["column"])


def test_json_contract(capsys, inconclusive_file, syntax_error_file):
    rc, out, _ = run_cli(capsys, "--format", "json", RACE, inconclusive_file, syntax_error_file)
    assert rc == 1
    doc = json.loads(out)
    assert set(doc) == {"version", "tool", "errors", "files"}
    assert doc["version"] == 1
    assert set(doc["tool"]) == {"cutespin", "spin", "compiler"}
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", doc["tool"]["spin"])
    assert doc["tool"]["compiler"] in ("tcc", "gcc", "cc")
    assert doc["errors"] and all(set(e) == {"path", "message"} for e in doc["errors"])
    assert [e["path"] for e in doc["errors"]] == [str(syntax_error_file)]
    assert "syntax error" in doc["errors"][0]["message"]

    files = {f["path"]: f for f in doc["files"]}
    assert set(files) == {str(RACE), str(inconclusive_file)}
    verdicts = {}
    for path, f in files.items():
        assert set(f) == {"path", "kernels"}
        n_lines = len(Path(path).read_text().splitlines())
        for k in f["kernels"]:
            assert set(k) == KERNEL_KEYS
            verdicts[k["qualname"]] = k
            assert k["verdict"] in ("counterexample", "verified", "inconclusive")
            assert isinstance(k["line"], int) and 1 <= k["line"] <= n_lines
            assert set(k["bounds"]) == BOUNDS_KEYS
            assert set(k["stats"]) == STATS_KEYS
            assert k["stats"]["compiler"] == doc["tool"]["compiler"]
            assert isinstance(k["assumptions"], list)
            assert (k["verdict"] == "counterexample") == bool(k["findings"])
            if k["verdict"] == "inconclusive":
                assert isinstance(k["reason"], str) and k["reason"]
            for u in k["unmodeled"]:
                assert set(u) == {"path", "line", "construct", "why"}
            for fd in k["findings"]:
                assert set(fd) == FINDING_KEYS
                assert fd["path"] == path
                assert fd["code"] == CODES[fd["kind"]]
                assert fd["severity"] == "error"
                check_range(fd["range"], n_lines)
                for rel in fd["related"]:
                    assert set(rel) == {"path", "range", "message"}
                    check_range(rel["range"], n_lines)
                for fx in fd["fixes"]:
                    assert set(fx) == {"title", "edits", "verified"}
                    assert isinstance(fx["verified"], bool)
                    assert fx["edits"]
                    for e in fx["edits"]:
                        assert set(e) == {"path", "range", "new_text"}
                        assert e["path"] == path
                        check_range(e["range"], n_lines)
                        assert isinstance(e["new_text"], str)

    race = verdicts["ScaleHandoff.kernel"]
    assert race["verdict"] == "counterexample"
    (fd,) = race["findings"]
    assert fd["code"] == "CS201" and fd["kind"] == "race"
    assert fd["range"]["start"] == {"line": 68, "column": 30}
    assert {r["range"]["start"]["line"] for r in fd["related"]} >= {62, 64, 67}
    assert any(fx["verified"] for fx in fd["fixes"])
    assert race["bounds"]["cluster"] == 1 and race["bounds"]["states"] > 0

    pipe = verdicts["PipeCopy.kernel"]
    assert pipe["verdict"] == "inconclusive"
    assert pipe["findings"] == []
    assert [(u["path"], u["line"]) for u in pipe["unmodeled"]] == [(str(inconclusive_file), INCONCLUSIVE_CALL_LINE)]


def test_loop_bound_shows_in_json_bounds(capsys):
    rc, out, _ = run_cli(capsys, "--format", "json", "--loop-bound", "2", RING_OK)
    assert rc == 0
    (k,) = json.loads(out)["files"][0]["kernels"]
    assert k["verdict"] == "verified"
    assert k["bounds"]["loop"] == 2
    rc, out, _ = run_cli(capsys, "--format", "json", RING_OK)
    assert rc == 0
    (k,) = json.loads(out)["files"][0]["kernels"]
    assert k["bounds"]["loop"] == 2 * k["bounds"]["stages"] + 1  # the documented default


# ---------------------------------------------------------------------------------------------
# SARIF


def test_sarif(capsys, inconclusive_file):
    rc, out, _ = run_cli(capsys, "--format", "sarif", RACE, inconclusive_file)
    assert rc == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    assert len(doc["runs"]) == 1
    run = doc["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert set(rule_ids) >= {"CS101", "CS201", "CS301", "CS401", "CS501", "CS601", "CS701", "CS901", "CS902"}
    assert len(rule_ids) == len(set(rule_ids))
    races = [r for r in run["results"] if r["ruleId"] == "CS201"]
    assert len(races) == 1
    loc = races[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == RACE.resolve().as_uri()
    assert loc["region"]["startLine"] == 68 and loc["region"]["startColumn"] == 30
    assert races[0]["level"] == "error"
    assert races[0]["relatedLocations"]
    assert races[0]["fixes"]
    by_rule = {r["ruleId"] for r in run["results"]}
    assert {"CS901", "CS902"} <= by_rule
    assert all(r["ruleId"] in rule_ids for r in run["results"])
    assert run["invocations"][0]["executionSuccessful"] is True


# ---------------------------------------------------------------------------------------------
# --emit-promela


def _source_identifiers(text: str) -> set:
    tree = ast.parse(text)
    ids = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            ids.add(n.id)
        elif isinstance(n, ast.Attribute):
            ids.add(n.attr)
        elif isinstance(n, ast.arg):
            ids.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            ids.add(n.name)
        elif isinstance(n, ast.keyword) and n.arg:
            ids.add(n.arg)
    return ids


def test_emit_promela_writes_a_position_free_model_and_its_line_table(capsys, tmp_path):
    out_dir = tmp_path / "models"
    rc, _, _ = run_cli(capsys, "--no-fixes", "--emit-promela", out_dir, RACE)
    assert rc == 1
    pmls = sorted(out_dir.glob("*.pml"))
    tables = sorted(out_dir.glob("*.lines.json"))
    assert len(pmls) == 1 and len(tables) == 1
    assert tables[0].name == pmls[0].name[:-len(".pml")] + ".lines.json"
    pml = pmls[0].read_text()
    assert "proctype" in pml

    src = RACE.read_text()
    words = set(re.findall(r"[A-Za-z_]\w*", pml))
    assert "sRow" not in words and "ready" not in words
    assert not (words & _source_identifiers(src)), sorted(words & _source_identifiers(src))

    table = json.loads(tables[0].read_text())
    pml_lines = pml.count("\n") + 1
    src_lines = len(src.splitlines())
    assert table
    for key, info in table.items():
        assert 1 <= int(key) <= pml_lines
        assert set(info) == {"line", "path", "process", "what"}
        assert info["line"] is None or 1 <= info["line"] <= src_lines
        assert info["path"] == ""  # every step is in the analyzed file, none in a sibling module
    assert {62, 64, 67, 68} <= {i["line"] for i in table.values()}

    # The emitted model is the real one: SPIN finds the race in it on its own.
    res = check_model(pml, find_tools(), timeout=20)
    assert res.status == "error" and res.error == "assertion"
    assert table[str(res.fail_line)]["line"] == 68


def test_emit_promela_keeps_one_model_per_kernel_across_same_named_files(capsys, tmp_path):
    for sub in ("a", "b"):
        (tmp_path / "src" / sub).mkdir(parents=True)
        shutil.copy(RACE, tmp_path / "src" / sub / "kernel.py")
    out_dir = tmp_path / "models"
    rc, _, _ = run_cli(capsys, "--no-fixes", "--emit-promela", out_dir, tmp_path / "src")
    assert rc == 1
    assert len(list(out_dir.glob("*.pml"))) == 2
    assert len(list(out_dir.glob("*.lines.json"))) == 2


# ---------------------------------------------------------------------------------------------
# --baseline


def test_baseline_records_then_reports_only_new_findings(capsys, tmp_path):
    baseline = tmp_path / "baseline.json"
    rc, out, err = run_cli(capsys, "--no-fixes", "--baseline", baseline, RACE)
    assert rc == 0
    assert baseline.exists()
    assert "recorded 1 finding" in err
    recorded = json.loads(baseline.read_text())
    assert recorded["version"] == 1
    assert [(e["code"], e["line"]) for e in recorded["findings"]] == [("CS201", 68)]

    rc, out, _ = run_cli(capsys, "--no-fixes", "--baseline", baseline, RACE)
    assert rc == 3
    assert "CS201" not in out
    assert "ScaleHandoff.kernel: inconclusive" in out

    rc, out, _ = run_cli(capsys, "--no-fixes", "--format", "json", "--baseline", baseline, RACE)
    assert rc == 3
    (k,) = json.loads(out)["files"][0]["kernels"]
    assert k["verdict"] == "inconclusive" and k["findings"] == []

    # Another buggy file is not covered by the baseline.
    rc, out, _ = run_cli(capsys, "--no-fixes", "--baseline", baseline, DEADLOCK)
    assert rc == 1
    assert "CS101" in out


def test_baseline_survives_a_line_shift(capsys, tmp_path):
    kernel = tmp_path / "handoff.py"
    shutil.copy(RACE, kernel)
    baseline = tmp_path / "baseline.json"
    assert run_cli(capsys, "--no-fixes", "--baseline", baseline, kernel)[0] == 0
    lines = kernel.read_text().splitlines(keepends=True)
    kernel.write_text("".join(lines[:1] + ["# a new comment line\n", "\n"] + lines[1:]))
    rc, out, _ = run_cli(capsys, "--no-fixes", "--baseline", baseline, kernel)
    assert rc == 3, out
    assert "CS201" not in out


def test_baseline_unreadable_is_a_usage_error(capsys, tmp_path):
    baseline = tmp_path / "baseline.json"
    baseline.write_text("{not json")
    rc, out, err = run_cli(capsys, "--no-fixes", "--baseline", baseline, RACE)
    assert rc == 2
    assert "baseline" in err and "Traceback" not in err


def test_baseline_matches_the_same_file_however_it_is_named(capsys, tmp_path, monkeypatch):
    kernel = tmp_path / "handoff.py"
    shutil.copy(RACE, kernel)
    baseline = tmp_path / "baseline.json"
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "--no-fixes", "--baseline", baseline, "handoff.py")[0] == 0
    rc, out, _ = run_cli(capsys, "--no-fixes", "--baseline", baseline, kernel.resolve())
    assert "CS201" not in out
    assert rc == 3
