"""The mutation fuzzer: hypothesis generates mutation plans over the samples and small kernels;
worker processes run each mutant through the front end and the lowering (`front` mode) or end to
end through SPIN (`e2e` mode: `api.check_source` with fixes off and a small time limit), and
classify every outcome. Anything unclassified is a crash.

Each worker runs hypothesis with its own seed, so a run is reproducible; every crash is reported
with its plan and the mutant's text, and the run goes on. A mutant
that runs past the hang limit (a front end that never returns) gets its worker killed and is a
crash too; so is a worker that dies (a segfault in the parser).

    python -m tests.robustness.fuzz --mutants 100000 --e2e 2000   # a long run (see docs/robustness.md)
"""
from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import queue as queue_mod
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HANG_S = float(os.environ.get("CUTESPIN_FUZZ_HANG_S", "60"))  # one mutant may take this long at most
LOOP_BOUNDS = (None, 1, 2, 2, 3)  # None: the kernel's default (2 x stages + 1)
# End to end, mutations that mostly keep the file parseable, so most mutants reach SPIN.
E2E_OPERATORS = ("op_number", "op_name", "op_dsl_call", "op_args", "op_operator", "op_keyword", "op_line_delete",
                 "op_line_duplicate", "op_line_swap", "op_wrap")


def default_workers() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        n = os.cpu_count() or 1
    return max(1, min(int(os.environ.get("CUTESPIN_FUZZ_WORKERS", n)), 16))


def _case_strategy(base_names, e2e: bool):
    from hypothesis import strategies as st

    from .mutate import OPERATORS
    # Indices modulo the choices: hypothesis favours small integers, which would favour the first
    # operators, bases and bounds (sampled_from leans to its first element).
    pick = lambda seq: st.integers(0, 1 << 20).map(lambda i: seq[i % len(seq)])  # noqa: E731
    ops = [i for i, op in enumerate(OPERATORS) if not e2e or op.__name__ in E2E_OPERATORS]
    step = st.tuples(pick(ops), st.integers(0, 1 << 16), st.integers(0, 1 << 16))
    # End to end: fewer steps, so that most mutants still lower to a model SPIN can run.
    return st.tuples(pick(base_names), st.lists(step, min_size=1, max_size=2 if e2e else 4), pick(LOOP_BOUNDS),
                     st.booleans())


def _settings(loop_bound, strict, e2e: bool):
    from cutespin.config import Settings
    if e2e:
        return Settings(loop_bound=loop_bound, strict=strict, timeout=1.5, memory_mb=256, depth=20_000,
                        verify_fixes=False)
    return Settings(loop_bound=loop_bound, strict=strict)


def classify_e2e(text: str, settings) -> list:
    """`api.check_source` on one mutant; one class per kernel (or one for the file). Raises on a
    crash: an exception, an internal error, a verdict that is not honest."""
    from cutespin import api
    from cutespin.engine.spin import ToolError
    from .mutate import assert_promela_is_generated_only

    api.CACHE.data.clear()  # every lowered mutant really runs SPIN
    try:
        fr = api.check_source(text, "mutant.py", settings, with_fixes=False)
    except ToolError as e:
        raise AssertionError(f"tool error on a mutant (SPIN or the compiler failed): {e}") from None
    if fr.error:
        if fr.error.startswith("cannot analyze"):
            return ["syntax-error"]
        raise AssertionError(f"file error that is not a front-end error: {fr.error}")
    if not fr.kernels:
        return ["no-kernel"]
    out = []
    for kr in fr.kernels:
        if kr.verdict not in ("counterexample", "verified", "inconclusive"):
            raise AssertionError(f"unknown verdict {kr.verdict!r}")
        if kr.verdict == "inconclusive" and not kr.reason:
            raise AssertionError("inconclusive without a reason")
        if kr.run is not None:
            if kr.run.status == "incomplete" and kr.verdict == "verified":
                raise AssertionError(f"verified although the search hit the {kr.run.incomplete} bound")
            if kr.promela is not None:
                assert_promela_is_generated_only(kr.promela.text, text)
        if kr.verdict == "counterexample" and not kr.findings:
            raise AssertionError("counterexample without a finding")
        if kr.verdict == "inconclusive" and kr.run is not None and kr.run.status == "incomplete":
            out.append(f"inconclusive:{kr.run.incomplete}")
        elif kr.verdict == "inconclusive":
            out.append("inconclusive:" + ("unmodeled" if kr.unmodeled else "other"))
        else:
            out.append(kr.verdict + (":spin" if kr.run is not None else ":static"))
        if kr.run is not None:
            out.append("spin-run")
    return out


def _worker(mode: str, shard: int, seed: int, count: int, q) -> None:
    """One worker: hypothesis draws `count` cases with its seed; every outcome goes to `q`. A crash
    is reported and the run goes on (no shrinking: plans are at most four steps, and the parent
    must see every crash, not the first one)."""
    from hypothesis import HealthCheck, Phase, given
    from hypothesis import seed as hseed
    from hypothesis import settings as hsettings

    from .mutate import apply_plan, bases, classify_frontend, describe
    srcs = bases()
    names = sorted(srcs)
    e2e = mode == "e2e"

    @hsettings(max_examples=count, database=None, deadline=None, derandomize=False, print_blob=False,
               suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @hseed(seed)
    @given(_case_strategy(names, e2e))
    def run(case):
        base, plan, loop_bound, strict = case
        text = apply_plan(srcs[base], plan)
        key = hashlib.sha256(f"{base}\0{loop_bound}\0{strict}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
        what = f"{base} [{describe(plan)}] loop_bound={loop_bound} strict={strict}"
        q.put(("start", shard, key, what, base, plan))
        t0 = time.monotonic()
        settings = _settings(loop_bound, strict, e2e)
        try:
            classes = classify_e2e(text, settings) if e2e else classify_frontend(text, settings)
        except BaseException as e:  # noqa: BLE001 - every escape is a crash
            q.put(("crash", shard, key, what, text, "".join(traceback.format_exception(e))[-4000:]))
            return
        q.put(("done", shard, key, classes, time.monotonic() - t0))

    run()
    q.put(("exit", shard))


@dataclass
class Report:
    mode: str
    requested: int
    workers: int
    mutants: int = 0
    distinct: int = 0
    classes: Counter = field(default_factory=Counter)
    crashes: list = field(default_factory=list)  # (what, text, error)
    slowest: list = field(default_factory=list)  # (seconds, what)
    seconds: float = 0.0

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.classes.items()))
        slow = self.slowest[0][0] if self.slowest else 0.0
        return (f"cutespin fuzz ({self.mode}): {self.mutants} mutants ({self.distinct} distinct) in "
                f"{self.seconds:.0f} s on {self.workers} workers; crashes: {len(self.crashes)}; slowest mutant "
                f"{slow:.1f} s; outcomes: {kinds}")

    def slowest_text(self) -> str:
        """The slowest mutants by name: the per-mutant limit is what a slow input runs into first."""
        return f"cutespin fuzz ({self.mode}) slowest: " + "; ".join(f"{s:.1f} s {what}" for s, what in self.slowest[:3])

    def crash_text(self) -> str:
        out = [f"crash: {what}: {error.strip().splitlines()[-1] if error.strip() else '?'}"
               for what, _, error in self.crashes]
        for what, text, error in self.crashes[:5]:
            out.append(f"--- {what}\n{error}\n--- mutant source (first 3000 characters):\n{text[:3000]}")
        return "\n".join(out)


def run_fuzz(mode: str, mutants: int, workers: int | None = None, seed: int = 0,
             hang_s: float = HANG_S) -> Report:
    """Run `mutants` cases over `workers` processes and classify every outcome."""
    workers = workers or default_workers()
    workers = max(1, min(workers, mutants))
    from .mutate import apply_plan, bases
    srcs = bases()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    report = Report(mode, mutants, workers)
    shares = [mutants // workers + (1 if i < mutants % workers else 0) for i in range(workers)]
    procs, remaining, current, restarts = {}, {}, {}, Counter()
    seen: set = set()
    t0 = time.monotonic()

    def start(shard: int, count: int):
        s = seed * 1000 + shard * 7919 + restarts[shard] * 104729
        p = ctx.Process(target=_worker, args=(mode, shard, s, count, q), daemon=True)
        p.start()
        procs[shard] = p
        remaining[shard] = count
        current.pop(shard, None)

    for shard, count in enumerate(shares):
        start(shard, count)
    live = set(procs)
    while live:
        try:
            msg = q.get(timeout=1.0)
        except queue_mod.Empty:
            msg = None
        now = time.monotonic()
        if msg is not None:
            kind, shard = msg[0], msg[1]
            if kind == "start":
                current[shard] = (now, msg[2], msg[3], msg[4], msg[5])
            elif kind == "done":
                _, _, key, classes, secs = msg
                report.mutants += 1
                remaining[shard] -= 1
                if key not in seen:
                    seen.add(key)
                    report.classes.update(classes)
                report.slowest = sorted(report.slowest + [(secs, current.get(shard, (0, "", "?"))[2])],
                                        reverse=True)[:5]
                current.pop(shard, None)
            elif kind == "crash":
                report.mutants += 1
                report.crashes.append((msg[3], msg[4], msg[5]))
                current.pop(shard, None)
            elif kind == "exit":
                live.discard(shard)
                procs[shard].join(timeout=10)
        for shard in list(live):
            p = procs[shard]
            started = current.get(shard)
            hung = started is not None and now - started[0] > hang_s
            died = not p.is_alive() and p.exitcode not in (0, None)
            if died:
                # A worker exited without saying goodbye: drain what it sent before counting it dead.
                time.sleep(0.2)
                if shard not in live:
                    continue
            if hung or died:
                if p.is_alive():
                    p.kill()
                p.join(timeout=10)
                why = f"no result after {hang_s:.0f} s (hang)" if hung else f"worker died (exit code {p.exitcode})"
                if started is not None:
                    report.mutants += 1
                    report.crashes.append((started[2], apply_plan(srcs[started[3]], started[4]), why))
                    remaining[shard] -= 1
                restarts[shard] += 1
                if remaining[shard] > 0 and restarts[shard] <= 5:
                    start(shard, remaining[shard])
                else:
                    live.discard(shard)
    report.distinct = len(seen) + len(report.crashes)
    report.seconds = time.monotonic() - t0
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=10_000, help="front end + lowering mutants")
    ap.add_argument("--e2e", type=int, default=600, help="end-to-end mutants through SPIN")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CUTESPIN_FUZZ_SEED", "0")))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "server"))
    failed = False
    for mode, n in (("front", args.mutants), ("e2e", args.e2e)):
        if n <= 0:
            continue
        rep = run_fuzz(mode, n, args.workers, args.seed)
        print(rep.summary(), flush=True)
        print(rep.slowest_text(), flush=True)
        if rep.crashes:
            failed = True
            print(rep.crash_text(), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
