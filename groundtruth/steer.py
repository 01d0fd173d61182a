"""Steering: turn cutespin's counterexample trail into a copy of the kernel that the GPU must follow.

    python groundtruth/steer.py [SAMPLE.py ...] [--out groundtruth/steered]

For every counterexample in the given samples (default: all of samples/) this runs
``cutespin.api.check_source``, reads the finding's trail (``Finding.steps``: role, source line and
operation of each step; ``related`` for the roles left blocked) and decides where the trail makes
one role wait for another that the hardware would not make wait:

* deadlock: each role that the trail leaves blocked stopped at its wait while the other roles ran
  on. It is delayed right before that wait, so the others get as far as the trail has them.
* race, write-after-read (the trail ends with a write): the reader of the racing pair is delayed
  before its read, so the write lands first and the read sees the new data.
* race, read-after-write (the trail ends with a read): the writer would have to be delayed past
  its own release; when the trail shows the writer's release (arrive, flag update) after the write
  and the reader waiting for it, no delay can reorder them: listed as not reproducible.
* exit: the role that touches a peer CTA's shared memory is delayed before that access, so the
  peer has exited by then.
* scope and fence findings are about visibility (a release of too narrow a scope, a missing
  proxy fence), not about timing: listed as not reproducible, with the reason.

A delay is a spin on ``cute.arch.globaltimer()`` for ``GT_DELAY_NS`` nanoseconds (read from the
environment when the copy is imported, default 20 ms), guarded by the role's warp index (and CTA
rank in the cluster, or block index, when the model has several CTAs). The copy is the sample with
line 1 (its ``cutespin-expect`` line) replaced by the delay constant and the delay blocks inserted;
every other line is the sample's own. ``plan.json`` lists every finding with its delays or the
reason it is not reproducible.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DELAY_NS = 20_000_000
SHORT_DELAY_NS = 5_000


@dataclass
class Delay:
    line: int  # source line of the sample; the delay goes right before its statement
    cta: Optional[int]  # None: every CTA
    warp: int
    role: str
    why: str


@dataclass
class Plan:
    sample: str  # file stem
    kernel: str
    code: str
    kind: str
    line: int
    message: str
    reproducible: bool
    reason: str = ""  # why not, or what the delays do
    expect: str = ""  # what the steered run must show
    delays: list = field(default_factory=list)  # list[Delay]
    delays_ns: list = field(default_factory=list)  # delay lengths to run
    cta_expr: str = ""  # guard expression for the CTA index, "" when not needed
    trail: list = field(default_factory=list)  # "step i: role what (line L)"

    @property
    def variant(self) -> str:
        return f"{self.sample}__steer"

    def to_json(self) -> dict:
        d = asdict(self)
        d["variant"] = self.variant if self.reproducible else None
        return d


# ---- reading the trail ----------------------------------------------------------------------

_ACCESS = [
    (re.compile(r"^reads (.+)$"), "r"),
    (re.compile(r"^writes (.+)$"), "w"),
    (re.compile(r"^issues a TMA load into (.+?) completing"), "w"),
    (re.compile(r"^issues a TMA store reading (.+)$"), "r"),
]
_RELEASE = re.compile(r"^(arrives on|arrives and waits|updates flag|arrives at)")
_WAIT = re.compile(r"^(waits on|waits until|waits at|arrives and waits)")
_SYNC_OBJ = [re.compile(r"^(?:arrives on|waits on) (.+? \(CTA \d+\))"), re.compile(r"^(?:updates|waits until) (flag \S+)")]


def sync_object(what: str) -> Optional[str]:
    """The barrier or flag a release/wait step names ("ready (CTA 0)", "flag mFlag")."""
    for rx in _SYNC_OBJ:
        m = rx.match(what)
        if m:
            return m.group(1)
    return None


def access_of(what: str):
    for rx, kind in _ACCESS:
        m = rx.match(what)
        if m:
            return kind, m.group(1).strip()
    return None


def _role_of_message(msg: str, roles: list) -> Optional[str]:
    for r in sorted(roles, key=len, reverse=True):
        if msg.startswith(r + " "):
            return r
    return None


def _blocked(finding, roles):
    out = []
    for rel in finding.related:
        if rel.message.startswith("blocked: "):
            role = _role_of_message(rel.message[len("blocked: "):], roles)
            if role is not None:
                out.append((role, rel.span.line))
    return out


def plan_finding(sample: str, kr, f) -> Plan:
    procs = {p.role: p for p in kr.model.processes}
    roles = list(procs)
    multi_cta = len({p.cta for p in kr.model.processes}) > 1
    cluster = (kr.bounds or {}).get("cluster") or 1
    cta_expr = ""
    if multi_cta:
        cta_expr = ("cute.arch.block_idx_in_cluster()" if cluster > 1 else "cute.arch.block_idx()[0]")
    steps = list(f.steps)
    plan = Plan(sample, kr.qualname, f.code, f.kind, f.span.line, f.message, False, cta_expr=cta_expr,
                trail=[f"step {s.index}: {s.process} {s.what} (line {s.line})" for s in steps])

    def delay(role, line, why):
        p = procs[role]
        plan.delays.append(Delay(line, p.cta if multi_cta else None, p.warp, role, why))

    last = steps[-1] if steps else None
    if f.kind == "deadlock":
        blocked = _blocked(f, roles)
        if not blocked:
            plan.reason = "the trail names no blocked role"
            return plan
        for role, line in blocked:
            seen = [s for s in steps if s.process == role]
            after = [s.index for s in steps if s.process != role and (not seen or s.index > seen[-1].index)]
            span = f"steps {after[0]}-{after[-1]}" if after else "no later steps"
            delay(role, line, f"the trail leaves {role} blocked at line {line} while the other roles run "
                              f"({span}); delay it before that wait")
        plan.reproducible = True
        plan.expect = "hang"
        plan.reason = "every blocked role reaches its wait only after the others have run as far as in the trail"
        plan.delays_ns = [DEFAULT_DELAY_NS]
        return plan

    if f.kind == "exit":
        if last is None or last.process not in procs:
            plan.reason = "the trail does not end with the access to the exited CTA"
            return plan
        delay(last.process, last.line, f"{last.process} {last.what} at line {last.line} after the target CTA "
                                        f"may have exited; delay it so the target has exited")
        plan.reproducible = True
        plan.expect = "error, wrong result or hang (undefined behaviour); clean means the hardware tolerated it"
        plan.reason = "the accessing role is held back until the peer CTA has run to its end"
        plan.delays_ns = [DEFAULT_DELAY_NS]
        return plan

    if f.kind == "race" and last is not None:
        acc = access_of(last.what)
        if acc is None:
            plan.reason = f"the trail's last step is not an access: {last.what}"
            return plan
        kind, region = acc
        partner = None
        for s in reversed(steps[:-1]):
            a = access_of(s.what)
            if s.process != last.process and a is not None and a[1] == region and a[0] != kind:
                partner = s
                break
        if partner is None:
            plan.reason = f"no conflicting access to {region} by another role in the trail"
            return plan
        if kind == "w":
            # write-after-read: hold the reader back until the write has landed.
            delay(partner.process, partner.line,
                  f"{partner.process} {partner.what} (line {partner.line}) is not ordered before "
                  f"{last.process} {last.what} (line {last.line}); delay the read so the write lands first")
            plan.reproducible = True
            plan.expect = "wrong result (the read sees the overwritten buffer), racecheck hazard, or a hang"
            plan.reason = "the reader is held back until the unordered write has happened"
            plan.delays_ns = [DEFAULT_DELAY_NS, SHORT_DELAY_NS]
            return plan
        # read-after-write: the writer would have to be late.
        between = [s for s in steps if partner.index < s.index < last.index]
        rel = next((s for s in between if s.process == partner.process and _RELEASE.match(s.what)), None)
        waits = [s for s in between if s.process == last.process and _WAIT.match(s.what)
                 and rel is not None and s.index > rel.index]
        obj = sync_object(rel.what) if rel is not None else None
        wait = next((s for s in waits if obj is not None and sync_object(s.what) == obj), None)
        if rel is not None and wait is not None:
            plan.reason = (f"the racing write (line {partner.line}) comes before {partner.process}'s own release "
                           f"'{rel.what}' (line {rel.line}), which {last.process} waits for (line {wait.line}) before "
                           f"the read: delaying the writer delays the release too. The missing order is between "
                           f"lanes of one warp (the release covers the releasing lane's stores only), and lanes "
                           f"re-converge at elect_one/sync before the release, so no delay can reorder them; "
                           f"only racecheck can show it")
            return plan
        delay(partner.process, partner.line,
              f"{partner.process} {partner.what} (line {partner.line}) is not ordered before "
              f"{last.process} {last.what} (line {last.line}); delay the write so the read comes first")
        plan.reproducible = True
        plan.expect = "wrong result (stale read) or racecheck hazard"
        plan.reason = "the writer is held back until the unordered read has happened"
        plan.delays_ns = [DEFAULT_DELAY_NS]
        return plan

    if f.kind == "scope":
        plan.reason = ("a release/acquire of too narrow a scope is a visibility bug, not a timing one: in the trail "
                       "the read already comes after the release in time, so a delay adds nothing (repeated plain "
                       "runs are the test); compute-sanitizer does not check scopes (blind spot)")
        return plan
    if f.kind == "fence":
        plan.reason = ("a missing proxy fence is about which proxy sees the generic writes, not about timing: the "
                       "trail's writes already come first in time, so a delay adds nothing (the plain run is the "
                       "test); compute-sanitizer does not check proxy fences (blind spot)")
        return plan
    plan.reason = f"no steering rule for {f.kind} findings"
    return plan


def analyze(path: Path, settings=None):
    """cutespin's verdict on a sample ({verdict, kinds, findings}) and a plan per counterexample."""
    from cutespin.api import check_source
    from cutespin.config import Settings, settings_for_path

    settings = settings or settings_for_path(path, Settings()).with_overrides(verify_fixes=False)
    fr = check_source(path.read_text(), str(path), settings, with_fixes=False)
    if fr.error:
        raise RuntimeError(fr.error)
    plans, verdicts, kinds, findings = [], [], [], []
    for kr in fr.kernels:
        verdicts.append(kr.verdict)
        for f in kr.findings:
            kinds.append(f.kind)
            findings.append(f"{f.code} {f.kind} line {f.span.line}")
            if kr.verdict == "counterexample" and not f.possible:
                plans.append(plan_finding(path.stem, kr, f))
    order = ("counterexample", "inconclusive", "verified")
    verdict = next((v for v in order if v in verdicts), "no kernel")
    return {"verdict": verdict, "kinds": sorted(set(kinds)), "findings": findings}, plans


def plans_for(path: Path, settings=None) -> list:
    return analyze(path, settings)[1]


# ---- writing the steered copy ---------------------------------------------------------------

def _statement_at(tree: ast.AST, line: int):
    """The innermost simple statement that contains `line`."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if not isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef, ast.ClassDef,
                                     ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith, ast.Try)):
                if best is None or node.lineno >= best.lineno:
                    best = node
    return best


def delay_block(indent: str, d: Delay, cta_expr: str, source: str) -> list:
    lines = [f"{indent}# cutespin-steer: {d.why} ({source}:{d.line})"]
    ind = indent
    if d.cta is not None and cta_expr:
        lines.append(f"{ind}if {cta_expr} == {d.cta}:")
        ind += "    "
    lines.append(f"{ind}if cute.arch.warp_idx() == {d.warp}:")
    ind += "    "
    lines.append(f"{ind}_gt_t0 = cute.arch.globaltimer()")
    lines.append(f"{ind}while cute.arch.globaltimer() - _gt_t0 < _GT_DELAY_NS:")
    lines.append(f"{ind}    pass")
    return lines


HEADER = ('import os as _gt_os; _GT_DELAY_NS = int(_gt_os.environ.get("GT_DELAY_NS", "{default}"))  '
          '# GENERATED by groundtruth/steer.py from {source}: do not edit')


def steer_source(text: str, plan: Plan, source: str) -> str:
    tree = ast.parse(text)
    lines = text.splitlines()
    inserts: dict = {}  # 0-based index of the statement's first line -> inserted lines
    for d in plan.delays:
        st = _statement_at(tree, d.line)
        if st is None:
            raise ValueError(f"{source}:{d.line}: no statement to put a delay before")
        first = lines[st.lineno - 1]
        indent = first[: len(first) - len(first.lstrip())]
        inserts.setdefault(st.lineno - 1, []).extend(delay_block(indent, d, plan.cta_expr, source))
    out = []
    for i, ln in enumerate(lines):
        if i == 0:
            out.append(HEADER.format(default=DEFAULT_DELAY_NS, source=source))
            if ln.strip() and not ln.lstrip().startswith("#"):
                out.append(ln)
            continue
        out.extend(inserts.get(i, []))
        out.append(ln)
    new = "\n".join(out) + "\n"
    ast.parse(new)  # still Python
    return new


def generate(paths, out_dir: Path) -> list:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*__steer.py"):
        old.unlink()
    all_plans, verdicts = [], {}
    for path in paths:
        path = Path(path)
        rel = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        verdicts[path.stem], plans = analyze(path)
        for plan in plans:
            all_plans.append(plan)
            if plan.reproducible:
                (out_dir / f"{plan.variant}.py").write_text(steer_source(path.read_text(), plan, str(rel)))
    data = {"verdicts": verdicts, "plans": [p.to_json() for p in all_plans]}
    (out_dir / "plan.json").write_text(json.dumps(data, indent=1) + "\n")
    return all_plans


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("samples", nargs="*")
    ap.add_argument("--out", default=str(ROOT / "groundtruth" / "steered"))
    a = ap.parse_args(argv)
    paths = [Path(p) for p in a.samples] or sorted((ROOT / "samples").glob("*.py"))
    plans = generate(paths, Path(a.out))
    for p in plans:
        if p.reproducible:
            where = "; ".join(f"{d.role} before line {d.line}" for d in p.delays)
            print(f"{p.sample}: {p.code} {p.kind} line {p.line}: steer {where} -> expect {p.expect}")
        else:
            print(f"{p.sample}: {p.code} {p.kind} line {p.line}: not reproducible: {p.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
