"""The device side of the ground truth: every Hopper-runnable sample and steered copy, plain and
under compute-sanitizer, each launch in its own process behind a hang watchdog.

    python groundtruth/run.py --out DIR [--jobs 6] [--budget 500] [--only NAME,...] [--no-gpu]

Needs the DSL importable (gpu.py sets PYTHONPATH) and ``groundtruth/steered/plan.json`` (written
by steer.py on a machine with spin: the verdicts and the steered copies). Each experiment runs
``launch.py`` in a new process group; the watchdog starts when the child prints ``GT-LAUNCH``
(after compiling) and kills the whole group if the launches outlive their limit: the GPU is never
reset. Results go to DIR/results.jsonl one line per experiment as they finish, so a run cut short
still brings back what it did. ``--no-gpu`` only compiles (a CPU check of the plumbing).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import cases as cases_mod  # noqa: E402

COMPILE_TIMEOUT = 240.0  # import + compile, before the launch marker (sanitizer start-up included)
LAUNCH_TIMEOUT = {"plain": 20.0, "racecheck": 45.0, "synccheck": 45.0, "memcheck": 45.0}
DEADLOCK_TIMEOUT_MS = 3000  # --racecheck-deadlock-timeout (milliseconds), when this compute-sanitizer has it;
# well above the steered delays (20 ms per wait), so only real hangs are reported


@dataclass
class Experiment:
    id: str
    sample: str  # sample stem; steered copies: "<stem>__steer"
    file: str  # relative to the repository root
    tool: str  # plain | racecheck | synccheck | memcheck
    launches: int
    small: bool
    priority: int
    env: dict = field(default_factory=dict)
    steered: bool = False
    delay_ns: int = 0


def sanitizer_path():
    for c in (shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer",
              "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if c and Path(c).exists():
            return c
    return None


def sanitizer_help(path):
    try:
        return subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60).stdout
    except Exception:  # noqa: BLE001
        return ""


def load_plan():
    data = json.loads((HERE / "steered" / "plan.json").read_text())
    return data["verdicts"], data["plans"]


def build_experiments(verdicts: dict, plans: list, only=None, which="all") -> list:
    exps = []
    if which in ("all", "main"):
        exps += main_set(verdicts, plans, only)
    if which in ("all", "followup"):
        exps += followup_set(verdicts, plans, only)
    exps.sort(key=lambda e: (e.priority, e.id))
    return exps


def followup_set(verdicts: dict, plans: list, only=None) -> list:
    """Second-round checks: long repeats, memcheck on the exits and crashes, deadlock locations."""
    exps = []
    samples = sorted(p.stem for p in (ROOT / "samples").glob("*.py"))
    for s in samples:
        if (only and s not in only) or cases_mod.case_for(s) is None:
            continue
        v = verdicts.get(s, {})
        kinds = set(v.get("kinds", []))
        file = f"samples/{s}.py"
        if v.get("verdict") == "verified":
            exps.append(Experiment(f"{s}:plain#500", s, file, "plain", 500, False, 1))
        elif kinds & {"scope"}:
            exps.append(Experiment(f"{s}:plain#2000", s, file, "plain", 2000, False, 1))
        elif kinds & {"exit"}:
            exps.append(Experiment(f"{s}:plain#200", s, file, "plain", 200, False, 1))
        elif kinds & {"deadlock", "race"}:
            for i in (2, 3):
                exps.append(Experiment(f"{s}:plain#{i}", s, file, "plain", 3, False, 1, {"GT_SEED": str(i)}))
        if s == "wrong_arrive_count":  # the plain run dies with a launch failure: which fault?
            exps.append(Experiment(f"{s}:memcheck", s, file, "memcheck", 1, True, 3))
    for p in plans:
        if not p.get("reproducible") or (only and p["sample"] not in only):
            continue
        var = p["variant"]
        file = f"groundtruth/steered/{var}.py"
        for ns in p["delays_ns"]:
            tag = f"{var}@{ns}ns"
            env = {"GT_DELAY_NS": str(ns)}
            if p["kind"] == "deadlock":
                # racecheck's deadlock report names the barrier and threads the steered run hangs on
                exps.append(Experiment(f"{tag}:racecheck", var, file, "racecheck", 1, True, 2, env, True, ns))
    return exps


def main_set(verdicts: dict, plans: list, only=None) -> list:
    exps = []
    samples = sorted(p.stem for p in (ROOT / "samples").glob("*.py"))
    for s in samples:
        if only and s not in only:
            continue
        if cases_mod.case_for(s) is None:
            continue
        v = verdicts.get(s, {})
        verified = v.get("verdict") == "verified"
        kinds = set(v.get("kinds", []))
        file = f"samples/{s}.py"
        if verified:
            n = 50
        elif kinds & {"scope", "fence"}:
            n = 30  # visibility bugs: many chances to see stale data
        else:
            n = 3
        exps.append(Experiment(f"{s}:plain", s, file, "plain", n, False, 0))
        exps.append(Experiment(f"{s}:racecheck", s, file, "racecheck", 1, True, 2))
        exps.append(Experiment(f"{s}:synccheck", s, file, "synccheck", 1, True, 3))
        if "exit" in kinds:
            exps.append(Experiment(f"{s}:memcheck", s, file, "memcheck", 1, True, 3))
    for p in plans:
        if not p.get("reproducible") or (only and p["sample"] not in only):
            continue
        var = p["variant"]
        file = f"groundtruth/steered/{var}.py"
        for ns in p["delays_ns"]:
            tag = f"{var}@{ns}ns"
            env = {"GT_DELAY_NS": str(ns)}
            exps.append(Experiment(f"{tag}:plain", var, file, "plain", 3, False, 1, env, True, ns))
            if p["kind"] in ("race", "exit"):
                exps.append(Experiment(f"{tag}:racecheck", var, file, "racecheck", 1, True, 2, env, True, ns))
            if p["kind"] == "exit":
                exps.append(Experiment(f"{tag}:memcheck", var, file, "memcheck", 1, False, 3, env, True, ns))
    return exps


SUMMARY_RX = re.compile(r"(ERROR SUMMARY|RACECHECK SUMMARY|========= (Race|Potential|Error|Warning|Barrier|"
                        r"Invalid|Out-of-range|Program hit|Target application|Deadlock|Unspecified|.*hazard)).*",
                        re.IGNORECASE)


def trim_log(lines, head=40, tail=25, cap=5000):
    keep = lines if len(lines) <= head + tail else lines[:head] + ["... (%d lines) ..." % (len(lines) - head - tail)] + lines[-tail:]
    text = "\n".join(keep)
    return text[:cap] + ("..." if len(text) > cap else "")


def parse_sanitizer(lines):
    out = {"error_summary": None, "racecheck_summary": None, "hazard_lines": 0, "notable": [], "deadlocks": []}
    for ln in lines:
        m = re.search(r"Deadlock detected in (.+?) called by threads starting at \((\d+),\d+,\d+\) in block "
                      r"\((\d+),\d+,\d+\).*?(barrier address: (0x[0-9a-f]+))?(?: at |$)", ln)
        if m:
            d = f"{m.group(1)} threads {m.group(2)}+" + (f" barrier {m.group(5)}" if m.group(5) else "")
            if d not in out["deadlocks"]:
                out["deadlocks"].append(d)
        m = re.search(r"ERROR SUMMARY:\s*(\d+)\s*error", ln)
        if m:
            out["error_summary"] = int(m.group(1))
        m = re.search(r"RACECHECK SUMMARY:\s*(\d+)\s*hazard", ln)
        if m:
            out["racecheck_summary"] = ln.split("=========")[-1].strip()
            out["hazards"] = int(m.group(1))
        if ln.startswith("=========") and re.search(r"(Race|hazard|Barrier|Invalid|Deadlock|Error|Warning|"
                                                       r"Unsupported|not supported)", ln, re.IGNORECASE):
            out["hazard_lines"] += 1
            if len(out["notable"]) < 12 and ln not in out["notable"]:
                out["notable"].append(ln[:300])
    return out


class Runner:
    def __init__(self, out: Path, jobs: int, budget: float, no_gpu: bool, python: str):
        self.out = out
        self.jobs = jobs
        self.deadline = time.time() + budget
        self.no_gpu = no_gpu
        self.python = python
        self.lock = threading.Lock()
        self.results = out / "results.jsonl"
        self.log = open(out / "run.log", "a", buffering=1)
        self.san = None if no_gpu else sanitizer_path()
        self.san_help = sanitizer_help(self.san) if self.san else ""
        self.deadlock_opt = "--racecheck-deadlock-timeout" in self.san_help

    def say(self, msg):
        with self.lock:
            line = f"[{time.strftime('%H:%M:%S')}] {msg}"
            print(line, flush=True)
            self.log.write(line + "\n")

    def command(self, e: Experiment):
        cmd = [self.python, str(HERE / "launch.py"), str(ROOT / e.file), "--sample", e.sample,
               "--launches", str(e.launches)]
        if e.small:
            cmd.append("--small")
        if e.env.get("GT_SEED"):
            cmd += ["--seed", e.env["GT_SEED"]]
        if self.no_gpu:
            cmd.append("--no-gpu")
        if e.tool == "plain" or self.no_gpu:
            return cmd
        san = [self.san, "--tool", e.tool]
        if e.tool == "racecheck":
            if "racecheck-report" in self.san_help:
                san += ["--racecheck-report", "all"]
            if self.deadlock_opt:
                san += ["--racecheck-deadlock-timeout", str(DEADLOCK_TIMEOUT_MS)]
        if e.tool == "memcheck" and "report-api-errors" in self.san_help:
            san += ["--report-api-errors", "no"]  # cuda-bindings' cuGetProcAddress probes are not kernel errors
        if "show-backtrace" in self.san_help:
            san += ["--show-backtrace", "no"]
        return san + cmd

    def run_one(self, e: Experiment) -> dict:
        rec = {**asdict(e), "status": None, "launch_results": [], "error": None, "notes": []}
        left = self.deadline - time.time()
        if left < 15:
            rec["status"] = "skipped"
            rec["error"] = "time budget used up"
            return self.finish(rec)
        if e.tool != "plain" and not self.no_gpu and self.san is None:
            rec["status"] = "skipped"
            rec["error"] = "compute-sanitizer not found"
            return self.finish(rec)
        cmd = self.command(e)
        rec["command"] = " ".join(cmd)
        env = dict(os.environ, PYTHONUNBUFFERED="1", **e.env)
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True)
        lines = []
        launched = threading.Event()

        def reader():
            for ln in proc.stdout:
                ln = ln.rstrip("\n")
                lines.append(ln)
                if ln.startswith("GT-LAUNCH"):
                    launched.set()

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        compile_limit = min(COMPILE_TIMEOUT, max(5.0, self.deadline - time.time()))
        t_launch = None
        while proc.poll() is None and not launched.is_set() and time.time() - t0 < compile_limit:
            time.sleep(0.05)
        if launched.is_set():
            t_launch = time.time()
            limit = LAUNCH_TIMEOUT[e.tool] + (min(0.1 * e.launches, 60.0) if e.tool == "plain" else 0)
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                rec["status"] = "hung"
                rec["notes"].append(f"no exit {limit:.0f} s after GT-LAUNCH: process group killed")
        elif proc.poll() is None:
            rec["status"] = "compile_timeout"
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        th.join(timeout=5)
        rec["rc"] = proc.returncode
        rec["seconds"] = round(time.time() - t0, 2)
        rec["launch_seconds"] = round(time.time() - t_launch, 2) if t_launch else None
        for ln in lines:
            if ln.startswith("GT-RESULT "):
                rec["launch_results"].append(json.loads(ln[len("GT-RESULT "):]))
            elif ln.startswith("GT-ERROR "):
                rec["error"] = json.loads(ln[len("GT-ERROR "):])
            elif ln.startswith("GT-COMPILED "):
                rec["compile"] = json.loads(ln[len("GT-COMPILED "):])
            elif ln.startswith("GT-NOTE"):
                rec["notes"].append(ln)
        done = any(ln.startswith("GT-DONE") for ln in lines)
        if rec["status"] is None:
            if rec["error"] is not None:
                ph = rec["error"].get("phase")
                rec["status"] = "launch_error" if ph == "launch" else f"{ph}_error"
            elif done:
                if self.no_gpu:
                    rec["status"] = "compiled"
                else:
                    bad = [r for r in rec["launch_results"] if not r.get("ok")]
                    rec["status"] = "wrong" if bad else "ok"
            else:
                rec["status"] = "crashed"
        rec["launches_ok"] = sum(1 for r in rec["launch_results"] if r.get("ok"))
        rec["launches_done"] = len(rec["launch_results"])
        rec["launch_results"] = rec["launch_results"][:5] + [r for r in rec["launch_results"][5:] if not r.get("ok")][:5]
        if e.tool != "plain":
            san_lines = [ln for ln in lines if not ln.startswith("GT-")]
            rec["sanitizer"] = parse_sanitizer(san_lines)
            rec["log"] = trim_log(san_lines)
        else:
            rec["log"] = trim_log([ln for ln in lines if not ln.startswith("GT-RESULT")], head=15, tail=15, cap=2500)
        return self.finish(rec)

    def finish(self, rec):
        with self.lock:
            with open(self.results, "a") as fh:
                fh.write(json.dumps(rec) + "\n")
        san = rec.get("sanitizer") or {}
        extra = ""
        if san:
            extra = f" errors={san.get('error_summary')} hazards={san.get('hazards')} {san.get('racecheck_summary') or ''}"
        self.say(f"{rec['id']}: {rec['status']} ({rec.get('launches_ok', 0)}/{rec.get('launches_done', 0)} ok, "
                 f"{rec.get('seconds')} s){extra}")
        return rec

    def run(self, exps):
        self.say(f"{len(exps)} experiments, {self.jobs} at a time, sanitizer={self.san} "
                 f"deadlock-timeout-option={self.deadlock_opt}")
        with ThreadPoolExecutor(self.jobs) as ex:
            list(ex.map(self.run_one, exps))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/cutespin-groundtruth"))
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--budget", type=float, default=480.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--set", default="all", choices=["all", "main", "followup"])
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    verdicts, plans = load_plan()
    only = set(x for x in a.only.split(",") if x) or None
    exps = build_experiments(verdicts, plans, only, a.set)
    if a.list:
        for e in exps:
            print(e.id, e.tool, e.launches, e.env)
        return 0
    r = Runner(out, a.jobs, a.budget, a.no_gpu, sys.executable)
    if r.san_help:
        (out / "sanitizer-help.txt").write_text(r.san_help[:20000])
    r.run(exps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
