"""State-space size: the collapsed-lane encoding vs one process per lane, and the wait-to-wait
atomic reduction, as warps, lanes, stages, loop bound, cluster size and runtime branches grow.

Every model comes from a synthetic CuTe DSL kernel (bench/kernels.py) through the real front end
and lowering, and is checked by the engine (`engine.spin.check_model`: spin -a, tcc, pan). Variants:

- collapsed: the model cutespin builds (a warp's lanes in lockstep in one process; each warp's
  body one atomic sequence broken only at blocking waits, docs/policies.md P10);
- per lane: the same protocol with every consumer (or producer) lane as its own process;
- no atomic: the collapsed model with the per-warp `atomic { }` removed (post-processed text).

A search that passes the time budget is shown as `>N` (states stored when it was stopped).
Times are pan's wall time, medians of 3 runs when a run takes under a second (1 run otherwise);
state counts are deterministic.

    python bench/statespace.py [--quick] [--timeout S] [--sweeps NAME ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, load, median, num, strip_atomic, table  # noqa: E402

import kernels as K  # noqa: E402
from cutespin.config import Settings  # noqa: E402
from cutespin.engine.spin import check_model, find_tools  # noqa: E402
from cutespin.findings import findings_from_run  # noqa: E402
from cutespin.frontend import build_models  # noqa: E402
from cutespin.model.promela import lower  # noqa: E402

TOOLS = None


def split_at_branches(text: str) -> str:
    """An experiment for the lowering: end each warp's atomic sequence before a top-level runtime
    branch and start a new one after it (more interleavings, so never less sound), so SPIN
    stores the state where the branches meet. Only top-level branches (no trip-count variants)."""
    lines, out, in_proc = text.split("\n"), [], False
    for i, line in enumerate(lines):
        if line.startswith("proctype P"):
            in_proc = True
        elif in_proc and line == "  if" and i + 1 < len(lines) and lines[i + 1].startswith("  :: true"):
            out += ["  }", line]
            continue
        elif in_proc and line == "  fi":
            out += [line, "  atomic {"]
            continue
        elif in_proc and line == "  }":
            in_proc = False
        out.append(line)
    return "\n".join(out)


def model(src: str):
    ks = build_models(src, "bench_kernel.py", Settings())
    assert len(ks) == 1, "one kernel per template"
    k = ks[0]
    if k.unmodeled:
        raise RuntimeError(f"template has unmodeled constructs: {k.unmodeled}")
    return k, lower(k)


def check(k, pm, text: str, timeout: float, reps: int = 3) -> dict:
    """Run one model; the verdict as finding codes (or ok / incomplete)."""
    runs = []
    for i in range(reps):
        r = check_model(text, TOOLS, timeout=timeout, memory_mb=2048)
        runs.append(r)
        if r.status != "ok" or r.timings.get("pan", 0) >= 1.0:
            break
    r = runs[0]
    if r.status == "error":
        codes = sorted({f.code for f in findings_from_run(k, pm, r)}) or [r.error]
        verdict = "+".join(codes)
    elif r.status == "ok":
        verdict = "ok"
    else:
        verdict = f"cut ({r.incomplete})"
    return {"states": r.states, "transitions": r.transitions, "pan": median([x.timings.get("pan") for x in runs]),
            "status": r.status, "verdict": verdict, "procs": len(k.processes), "lines": pm.text.count("\n")}


def cell(r: dict | None) -> str:
    if r is None:
        return "–"
    if r["status"] == "incomplete":
        return f">{num(r['states'])} (cut at {r['pan']:.0f} s)"
    t = r["pan"]
    return f"{num(r['states'])} ({t:.2f} s)" if t >= 0.01 else f"{num(r['states'])} (<0.01 s)"


def ratio(big: dict | None, small: dict | None) -> str:
    if big is None or small is None or not small["states"] or small["status"] == "incomplete":
        return "–"
    x = big["states"] / small["states"]
    return (">" if big["status"] == "incomplete" else "") + (f"{x:,.0f}×" if x >= 10 else f"{x:.1f}×")


def sweep(title: str, param: str, values: list, make, timeout: float, per_lane_lanes: int | None,
          no_atomic: bool = True) -> tuple:
    """One table: collapsed, per lane (when per_lane_lanes is given), no atomic."""
    rows, data = [], []
    stop_lane = stop_plain = False
    for v in values:
        k, pm = model(make(v, per_lane=False))
        base = check(k, pm, pm.text, timeout)
        lane = plain = None
        if per_lane_lanes is not None and not stop_lane:
            kl, pml = model(make(v, per_lane=True))
            lane = check(kl, pml, pml.text, timeout)
            stop_lane = lane["status"] == "incomplete"  # larger values only grow
        if no_atomic and not stop_plain:
            plain = check(k, pm, strip_atomic(pm.text), timeout)
            stop_plain = plain["status"] == "incomplete"
        data.append((v, base, lane, plain))
        row = [str(v), str(base["procs"]), cell(base), base["verdict"]]
        if per_lane_lanes is not None:
            row += [str(lane["procs"]) if lane else "–", cell(lane), lane["verdict"] if lane else "–", ratio(lane, base)]
        if no_atomic:
            odd = plain is not None and plain["status"] != "incomplete" and plain["verdict"] != base["verdict"]
            row += [cell(plain) + (f" **{plain['verdict']}**" if odd else ""), ratio(plain, base)]
        rows.append(row)
        print(f"  {title} {param}={v}: {' | '.join(row[1:])}", file=sys.stderr)
    head = [param, "procs", "collapsed: states (pan s)", "verdict"]
    if per_lane_lanes is not None:
        head += ["procs", f"per lane{'' if per_lane_lanes == 0 else f' ({per_lane_lanes} lanes/warp)'}: states",
                 "verdict", "per lane ÷ collapsed"]
    if no_atomic:
        head += ["no atomic: states", "no atomic ÷ collapsed"]
    return head, rows, data


def main(argv=None) -> int:
    global TOOLS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sweeps, 3 s budget per search")
    ap.add_argument("--timeout", type=float, default=None, help="budget per search in seconds (default 10; 3 with --quick)")
    ap.add_argument("--sweeps", nargs="*", help="lanes, verdicts, warps, stages, loop, cluster, branches")
    ap.add_argument("--file", nargs="*", default=[],
                    help="also compare collapsed vs no atomic on every kernel of these CuTe DSL files")
    args = ap.parse_args(argv)
    TOOLS = find_tools()
    q = args.quick
    timeout = args.timeout or (3.0 if q else 10.0)
    want = set(args.sweeps if args.sweeps is not None else
               ([] if args.file else ["lanes", "verdicts", "warps", "stages", "loop", "cluster", "branches"]))
    print(header("State space: collapsed lanes vs one process per lane; the wait-to-wait atomic reduction", sys.argv))
    print(f"budget per check: {timeout:g} s for spin -a, the build and pan (tcc, -DSAFETY, pan -m100000 -w18, "
          f"2 GB); `>N (cut at T s)`: the search was stopped after T s of pan with N states stored\n")
    t0 = time.monotonic()
    results = {}

    def show(name, title, head, rows, note=""):
        print(f"\n### {title}\n")
        print(table(head, rows, "l" + "r" * (len(head) - 1)))
        if note:
            print("\n" + note)

    if "lanes" in want:
        lanes = [1, 2, 4] if q else [1, 2, 3, 4, 6, 8]
        head, rows, data = sweep("ring", "lanes", lanes,
                                 lambda L, per_lane: K.ring(consumers=1, stages=2, loop=3, lanes=L, per_lane=per_lane),
                                 timeout, 0, no_atomic=False)
        results["lanes_ring"] = data
        show("lanes", "Lanes: TMA ring, 1 consumer warp of L lanes (2 stages, loop 3)", head, rows,
             "Collapsed: the consumer warp is one process whatever L is. Per lane: L consumer processes.")
        head, rows, data = sweep("handoff", "lanes", lanes,
                                 lambda L, per_lane: K.handoff(lanes=L, rounds=2, per_lane=per_lane),
                                 timeout, 0, no_atomic=False)
        results["lanes_handoff"] = data
        show("lanes", "Lanes: lane stores + sync_warp + elected arrive, 2 rounds (producer warp of L lanes)",
             head, rows, "Per lane: L producer processes ordered by a named barrier instead of sync_warp.")
        for name in ("lanes_ring", "lanes_handoff"):
            _, base, lane, _ = results[name][-1]
            results[name + "_ratio"] = (lane["states"] / base["states"], lane["status"] == "incomplete")
    if "verdicts" in want:
        L = 4 if q else 8
        rows = []
        cases = [("ring", "", lambda pl, b: K.ring(lanes=L, per_lane=pl, bug=b)),
                 ("ring", "parity", lambda pl, b: K.ring(lanes=L, per_lane=pl, bug=b)),
                 ("ring", "count", lambda pl, b: K.ring(lanes=L, per_lane=pl, bug=b)),
                 ("handoff", "", lambda pl, b: K.handoff(lanes=L, per_lane=pl, bug=b)),
                 ("handoff", "nosync", lambda pl, b: K.handoff(lanes=L, per_lane=pl, bug=b))]
        same = True
        for kind, bug, make in cases:
            k, pm = model(make(False, bug))
            base = check(k, pm, pm.text, timeout, reps=1)
            kl, pml = model(make(True, bug))
            lane = check(kl, pml, pml.text, timeout, reps=1)
            plain = check(k, pm, strip_atomic(pm.text), timeout, reps=1)
            kinds = {"ok" if r["verdict"] == "ok" else ("cut" if r["status"] == "incomplete" else "cex")
                     for r in (base, lane, plain)}
            agree = len(kinds) == 1
            same &= agree
            exact = base["verdict"] == lane["verdict"] == plain["verdict"]
            rows.append([f"{kind} {bug or 'correct'}", f"{base['verdict']} ({num(base['states'])})",
                         f"{lane['verdict']} ({num(lane['states'])})", f"{plain['verdict']} ({num(plain['states'])})",
                         ("yes" if exact else "yes (first finding differs)") if agree else "**no**"])
            print(f"  verdicts {kind} {bug}: {rows[-1][1:]}", file=sys.stderr)
        results["verdicts_same"] = same
        show("verdicts", f"Verdicts at {L} lanes (states in parentheses)",
             ["kernel", "collapsed", "per lane", "no atomic", "same"], rows,
             "ring parity: the producer starts at phase 0 (deadlock, CS101); ring count: `empty` expects one "
             "arrival too few (over-arrival, CS301); handoff nosync: the elected lane arrives without sync_warp "
             "(lane-level release race, CS201).")
    if "warps" in want:
        vals = [1, 2, 3] if q else [1, 2, 3, 4, 5]
        head, rows, data = sweep("ring", "consumer warps", vals,
                                 lambda C, per_lane: K.ring(consumers=C, stages=2, loop=3, lanes=2, per_lane=per_lane),
                                 timeout, 2)
        show("warps", "Warps: TMA ring, C consumer warps (2 stages, loop 3)", head, rows)
    if "stages" in want:
        vals = [1, 2, 3] if q else [1, 2, 3, 4, 6]
        head, rows, data = sweep("ring", "stages", vals,
                                 lambda S, per_lane: K.ring(consumers=2, stages=S, loop=2 * S + 1, lanes=2,
                                                            per_lane=per_lane),
                                 timeout, 2)
        show("stages", "Stages: TMA ring, 2 consumer warps, S stages, loop bound 2·S+1 (the default)", head, rows)
    if "loop" in want:
        vals = [1, 3, 5] if q else [1, 3, 5, 9, 13, 17]
        head, rows, data = sweep("ring", "loop bound", vals,
                                 lambda B, per_lane: K.ring(consumers=2, stages=2, loop=B, lanes=2, per_lane=per_lane),
                                 timeout, 2)
        show("loop", "Loop bound: TMA ring, 2 consumer warps, 2 stages, trip counts 1..B", head, rows)
    if "cluster" in want:
        vals = [1, 2] if q else [1, 2, 3, 4]
        head, rows, data = sweep("ring", "cluster", vals,
                                 lambda N, per_lane: K.ring(consumers=1, stages=2, loop=3, cluster=N, lanes=2,
                                                            per_lane=per_lane),
                                 timeout, 2)
        show("cluster", "Cluster size: N CTAs, each a TMA ring with 1 consumer warp (2 stages, loop 3)", head, rows)
    if "branches" in want:
        vals = [4, 8, 12] if q else [4, 8, 12, 16, 20, 24]
        rows = []
        for n in vals:
            k, pm = model(K.branches(n))
            base = check(k, pm, pm.text, timeout)
            plain = check(k, pm, strip_atomic(pm.text), timeout)
            split = check(k, pm, split_at_branches(pm.text), timeout)
            rows.append([str(n), cell(base), num(base["transitions"]), cell(plain), num(plain["transitions"]),
                         cell(split), num(split["transitions"])])
            print(f"  branches {n}: {rows[-1][1:]}", file=sys.stderr)
        show("branches", "Runtime branches between two waits (one producer warp, n `if` on runtime data)",
             ["branches", "collapsed: states (pan s)", "transitions", "no atomic: states (pan s)", "transitions",
              "atomic split at branches: states (pan s)", "transitions"],
             rows, "Inside an atomic sequence SPIN stores no intermediate state, so n two-way branches between two "
                   "waits are walked path by path: 2^n transitions for a handful of stored states. Without the "
                   "atomic wrapper, or with the atomic sequence ended before each runtime branch and restarted "
                   "after it (post-processed text, an experiment for the lowering), the branches meet in the state "
                   "store and the cost is linear.")
    if args.file:
        rows = []
        for path in args.file:
            for k in build_models(Path(path).read_text(), path, Settings()):
                try:
                    pm = lower(k)
                except Exception as e:  # noqa: BLE001 - too large to lower: nothing to compare
                    rows.append([f"{Path(path).name}: {k.qualname}", f"not lowered ({type(e).__name__})", "", "", ""])
                    continue
                if not k.processes:
                    continue
                base = check(k, pm, pm.text, timeout, reps=1)
                plain = check(k, pm, strip_atomic(pm.text), timeout, reps=1)
                rows.append([f"{Path(path).name}: {k.qualname}", f"{cell(base)} {base['verdict']}",
                             num(base["transitions"]), f"{cell(plain)} {plain['verdict']}", num(plain["transitions"])])
                print(f"  {rows[-1]}", file=sys.stderr)
        show("file", "Kernels of the given files: collapsed vs no atomic",
             ["kernel", "collapsed: states (pan s), verdict", "transitions", "no atomic: states (pan s), verdict",
              "transitions"], rows, "Verdicts are the model's (unmodeled constructs are ignored here).")
    if "lanes_ring_ratio" in results:
        lanes_top = 4 if q else 8
        rows = []
        for name, label in (("lanes_ring_ratio", "TMA ring"), ("lanes_handoff_ratio", "lane handoff")):
            x, cut = results[name]
            rows.append([f"{label}: per-lane ÷ collapsed states at {lanes_top} lanes", f"{'>' if cut else ''}{x:,.0f}×",
                         "≥ 100×", "**met**" if x >= 100 else "**not met**"])
        if "verdicts_same" in results:
            rows.append([f"same verdicts at {lanes_top} lanes (counterexample / verified)",
                         "yes" if results["verdicts_same"] else "no", "yes",
                         "**met**" if results["verdicts_same"] else "**not met**"])
        print("\n### Target\n")
        print(table(["target", "measured", "target", "result"], rows, "llll"))
    print(f"\n(benchmark ran {time.monotonic() - t0:.0f} s; load average at the end: {load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
