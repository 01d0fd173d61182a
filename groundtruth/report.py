"""results.jsonl (from the device) + steered/plan.json -> the table in groundtruth/RESULTS.md.

    python groundtruth/report.py [groundtruth/results/results.jsonl]

Rewrites only the text between ``<!-- table:begin -->`` and ``<!-- table:end -->`` in RESULTS.md
(the notes around it are written by hand from the evidence) and prints the table. Every record of
a sample counts: the first plain run and its repeats (``plain#500`` ...), each sanitizer tool.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- table:begin -->", "<!-- table:end -->"
SBEGIN, SEND = "<!-- steer:begin -->", "<!-- steer:end -->"
BLIND = {"scope": "sanitizer blind spot (scopes, GMEM flags)", "fence": "sanitizer blind spot (proxy fences)"}
FAILED = ("launch_error", "crashed")
# Which numbered note of RESULTS.md explains a sample's row (the evidence behind the agreement cell).
NOTE_REFS = {
    "tma_ring_wrap_parity": [1], "tma_bytes_never_complete": [1], "named_barrier_mismatch": [1],
    "pipeline_tma_consumer_count": [1], "wrong_arrive_count": [2], "elected_handoff_race": [3],
    "pipeline_async_handles_race": [3], "elected_handoff_fix_syncwarp": [3], "pipeline_async_handles_ok": [3],
    "tma_store_no_fence": [4], "dsmem_jacobi_scope": [5], "gmem_flag_scope": [5],
    "cluster_exit_peer_arrive": [6], "dsmem_jacobi_exit": [6],
}


# Judgements that the automatic rule cannot make, each backed by its note in RESULTS.md.
AGREEMENT_OVERRIDE = {
    "elected_handoff_race": "not reproduced on the GPU; racecheck flags it but flags its verified fix identically",
    "pipeline_async_handles_race": "not reproduced on the GPU; racecheck flags it but flags its verified fix identically",
}


def load(path: Path) -> list:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def plain_summary(recs) -> str:
    """One cell for all plain runs of one program (first run and repeats, one process each)."""
    if not recs:
        return "not run"
    parts = []
    ok = [r for r in recs if r["status"] == "ok"]
    if ok:
        parts.append(f"ok {sum(r['launches_ok'] for r in ok)}/{sum(r['launches_done'] for r in ok)} launches")
    wrong = [r for r in recs if r["status"] == "wrong"]
    if wrong:
        bad = [x for r in wrong for x in r["launch_results"] if not x.get("ok")]
        worst = max((v["bad"] for x in bad for v in x.values() if isinstance(v, dict) and "bad" in v), default=0)
        n = sum(r["launches_done"] for r in wrong)
        parts.append(f"**wrong** in {sum(n - r['launches_ok'] for r in wrong for n in [r['launches_done']])}/{n} "
                     f"launches (up to {worst} bad elements)")
    hung = [r for r in recs if r["status"] == "hung"]
    if hung:
        parts.append(f"**hang** ({len(hung)}/{len(recs)} processes, killed)")
    err = [r for r in recs if r["status"] in FAILED]
    if err:
        msg = (err[0].get("error") or {}).get("error", "").split("\n")[0].replace("AcceleratorError: ", "")
        parts.append(f"**launch failure** ({len(err)}/{len(recs)} processes: {msg})")
    other = [r for r in recs if r["status"] not in ("ok", "wrong", "hung") + FAILED]
    for r in other:
        parts.append(f"{r['status']}: {((r.get('error') or {}).get('error') or '')[:80]}")
    return "; ".join(parts)


def san_summary(r) -> str:
    if r is None:
        return "—"
    s = r.get("sanitizer") or {}
    bits = []
    if r["status"] == "hung":
        bits.append("hang")
        if s.get("deadlocks"):
            bits.append("deadlock: " + ", ".join(s["deadlocks"]))
    elif r["status"] in FAILED:
        bits.append("launch failure")
    elif r["status"] == "wrong":
        bits.append("wrong result")
    e, hz = s.get("error_summary"), s.get("hazards")
    if s.get("racecheck_summary"):
        errs = s["racecheck_summary"].split("(")[-1].split(" errors")[0] if "(" in s["racecheck_summary"] else "?"
        bits.append(f"**{errs} errors**" if hz or errs not in ("0", "?") else "clean")
        if hz and any("exited" in n for n in _notable(r)):
            bits.append("access to an exited block")
        elif hz:
            kinds = sorted({k for n in _notable(r) for k in ("RAW", "WAR", "WAW") if k in n})
            if kinds:
                bits.append("/".join(kinds) + " hazards")
    elif e is not None:
        bits.append(f"**{e} errors**" if e else "clean")
        first = next((n for n in _notable(r) if "SUMMARY" not in n and "COMPUTE-SANITIZER" not in n
                      and "Target application" not in n), None)
        if e and first:
            bits.append(first.replace("=========", "").strip()[:60])
    elif r["status"] not in ("hung",) + FAILED:
        bits.append("no summary")
    return ", ".join(bits)


def _notable(r):
    log = r.get("log") or ""
    return [ln for ln in log.splitlines() if ln.startswith("=========") and "Host Frame" not in ln]


def san_bad(r) -> bool:
    if r is None:
        return False
    s = r.get("sanitizer") or {}
    return bool(s.get("error_summary")) or bool(s.get("hazards")) or bool(s.get("deadlocks"))


def agreement(v, kinds, plain, sans, steered) -> str:
    allrecs = plain + [x for x in sans if x] + steered
    if v == "verified":
        clean = plain and all(r["status"] == "ok" for r in plain) and all(
            x is None or (x["status"] == "ok" and not san_bad(x)) for x in sans)
        if clean:
            return "agree: clean"
        if plain and all(r["status"] == "ok" for r in plain) and not any(
                x and x["status"] != "ok" for x in sans):
            return "agree on the GPU; racecheck false positive"
        return "**DISAGREE**"
    what = []
    if any(r["status"] == "hung" for r in allrecs if r["tool"] == "plain"):
        what.append("hang")
    if any(r["status"] == "wrong" for r in allrecs):
        what.append("wrong result")
    if any(r["status"] in FAILED for r in allrecs if r["tool"] == "plain"):
        what.append("launch failure")
    if any(san_bad(x) for x in allrecs if x["tool"] != "plain"):
        what.append("sanitizer")
    if what:
        return "agree: " + ", ".join(what)
    blind = [BLIND[k] for k in kinds if k in BLIND]
    return "not reproduced: " + ("; ".join(blind) if blind else "see notes")


def table(records, plan) -> str:
    verdicts = plan["verdicts"]
    plans = {p["sample"]: p for p in plan["plans"]}
    by = defaultdict(list)
    for r in records:
        by[(r["sample"], r["tool"], r.get("delay_ns", 0))].append(r)
    rows = ["| sample | cutespin | GPU plain | GPU steered (delay: outcome) | racecheck | synccheck | memcheck | agreement |",
            "|---|---|---|---|---|---|---|---|"]
    for s in sorted(verdicts):
        v = verdicts[s]
        plain = by.get((s, "plain", 0), [])
        sans = [by[(s, t, 0)][-1] if by.get((s, t, 0)) else None for t in ("racecheck", "synccheck", "memcheck")]
        if not plain and not any(sans):
            continue
        p = plans.get(s)
        steered, st_txt = [], "—"
        if p is not None:
            if p.get("reproducible"):
                parts = []
                for ns in p["delays_ns"]:
                    d = f"{ns / 1e6:g} ms" if ns >= 1_000_000 else f"{ns / 1e3:g} µs"
                    pr = by.get((p["variant"], "plain", ns), [])
                    steered += pr
                    txt = plain_summary(pr)
                    for t in ("racecheck", "memcheck"):
                        rr = by.get((p["variant"], t, ns))
                        if rr:
                            steered.append(rr[-1])
                            txt += f"; {t}: {san_summary(rr[-1])}"
                    parts.append(f"{d}: {txt}")
                st_txt = "<br>".join(parts)
            else:
                st_txt = "not steerable (see notes)"
        cs = v["verdict"] + ("" if not v["findings"] else ": " + ", ".join(v["findings"]))
        rows.append(f"| {s} | {cs} | {plain_summary(plain)} | {st_txt} | {san_summary(sans[0])} | "
                    f"{san_summary(sans[1])} | {san_summary(sans[2])} | "
                    f"{AGREEMENT_OVERRIDE.get(s) or agreement(v['verdict'], v['kinds'], plain, sans, steered)}"
                    + "".join(f" [{n}]" for n in NOTE_REFS.get(s, [])) + " |")
    return "\n".join(rows)


def steer_table(plan) -> str:
    rows = ["| sample | finding | steered copy | delays (role, before source line) or why not | expected |",
            "|---|---|---|---|---|"]
    for p in plan["plans"]:
        if p["reproducible"]:
            d = "; ".join(f"{x['role']} before line {x['line']}" for x in p["delays"])
            rows.append(f"| {p['sample']} | {p['code']} {p['kind']} line {p['line']} | "
                        f"steered/{p['variant']}.py | {d} | {p['expect']} |")
        else:
            rows.append(f"| {p['sample']} | {p['code']} {p['kind']} line {p['line']} | — | {p['reason']} | — |")
    return "\n".join(rows)


def _replace(text, begin, end, body):
    if begin in text and end in text:
        pre, rest = text.split(begin, 1)
        _, post = rest.split(end, 1)
        return pre + begin + "\n" + body + "\n" + end + post
    return text


def main(argv=None):
    argv = argv if argv is not None else sys.argv[1:]
    res = Path(argv[0]) if argv else HERE / "results" / "results.jsonl"
    plan = json.loads((HERE / "steered" / "plan.json").read_text())
    t = table(load(res), plan)
    print(t)
    md = HERE / "RESULTS.md"
    if md.exists():
        text = _replace(md.read_text(), BEGIN, END, t)
        md.write_text(_replace(text, SBEGIN, SEND, steer_table(plan)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
