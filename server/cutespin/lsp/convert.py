"""Kernel results and findings -> LSP diagnostics, hovers, code actions and code lenses.

Pure functions: they read `cutespin.api.KernelResult`s and `cutespin.findings` values and return
lsprotocol objects. Where a result was computed on an older version of the document, a
`Placement` maps its lines to the current text (see `positions`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import quote

from lsprotocol import types as T
from pygls.uris import from_fs_path

from ..api import verified_bounds
from ..model import symmetry
from ..findings import INCONCLUSIVE_CODE, UNMODELED_CODE, docs_url

SOURCE = "cutespin"
FIX_ALL_KIND = "source.fixAll.cutespin"
CMD_SHOW_PROMELA = "cutespin.showPromela"
CMD_SHOW_TRACE = "cutespin.showTrace"
CMD_RECHECK = "cutespin.recheck"
COMMANDS = (CMD_SHOW_PROMELA, CMD_SHOW_TRACE, CMD_RECHECK)

SEVERITY = {
    "error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
    "information": T.DiagnosticSeverity.Information, "hint": T.DiagnosticSeverity.Hint,
}
DEFAULT_LEVEL = {UNMODELED_CODE: "information", INCONCLUSIVE_CODE: "warning"}
HOVER_TAIL = 6  # the last steps of an interleaving always shown in a hover


@dataclass
class Placement:
    """Where the lines of one analysed text are in the current document."""

    uri: str
    path: str  # the path the analysis ran under (findings carry it)
    lines: list  # the analysed text, split into lines
    map_line: Callable[[int], tuple] = lambda line: (line, True)  # 0-based -> (current, clean)
    units: Callable[[str], int] = len  # length of a string in the client's position units

    def position(self, line: int, column: int) -> T.Position:
        """A 1-based line and code-point column of the analysed text, placed in the document."""
        line0 = max(line - 1, 0)
        current, _ = self.map_line(line0)
        text = self.lines[line0] if line0 < len(self.lines) else ""
        return T.Position(line=current, character=self.units(text[:max(column - 1, 0)]))

    def span_range(self, span) -> T.Range:
        if getattr(span, "path", "") and span.path != self.path:
            # In a sibling module: its own lines, not this document's edit history.
            return T.Range(start=T.Position(line=span.line - 1, character=max(span.column - 1, 0)),
                           end=T.Position(line=span.end_line - 1, character=max(span.end_column - 1, 0)))
        start = self.position(span.line, span.column)
        end = self.position(span.end_line, span.end_column)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return T.Range(start=start, end=end)

    def line_range(self, line: int) -> T.Range:
        """The text of a whole source line (without its indentation)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        indent = len(text) - len(text.lstrip())
        return T.Range(start=self.position(line, indent + 1), end=self.position(line, len(text.rstrip()) + 1))

    def clean(self, line: int) -> bool:
        return self.map_line(max(line - 1, 0))[1]

    def current_line(self, line: int) -> int:
        """The current 1-based line of a 1-based analysed line."""
        return self.map_line(max(line - 1, 0))[0] + 1

    def uri_for(self, path: str) -> str:
        if path == self.path:
            return self.uri
        return from_fs_path(path) or path


def doc_line(f, place: Placement, def_line: int) -> int:
    """The line of the analysed text where a finding shows: its own, or, inside a sibling
    module's helper, the call that led there (else the kernel's `def`)."""
    if f.path == place.path or not f.span.path:
        return f.span.line
    return f.span.anchor.line if f.span.anchor is not None else def_line


def finding_id(qualname: str, index: int) -> str:
    return f"{qualname}#{index}"


def level_for(code: str, default: str, overrides: Callable[[str], Optional[str]]) -> Optional[str]:
    """The severity level of a code after the user's overrides; None when turned off."""
    level = overrides(code) or default
    return None if level == "off" else level


# ------------------------------------------------------------------------------------ diagnostics


def kernel_diagnostics(kr, place: Placement, *, version: Optional[int], fixes_ready: bool,
                       overrides: Callable[[str], Optional[str]] = lambda c: None) -> list:
    """Every diagnostic of one kernel: findings, unmodeled constructs, an inconclusive verdict."""
    out = []
    for i, f in enumerate(kr.findings):
        level = level_for(f.code, f.severity, overrides)
        if level is None:
            continue
        related = [T.DiagnosticRelatedInformation(
            location=T.Location(uri=place.uri_for(r.path), range=place.span_range(r.span)), message=r.message)
            for r in f.related]
        where, message = place.span_range(f.span), f.message
        if f.path != place.path:
            # Inside a helper of a sibling module: shown at the call in this document that led there.
            anchor = f.span.anchor
            where = place.span_range(anchor) if anchor is not None else place.line_range(kr.line)
            message = f"{message} (in {Path(f.path).name} line {f.span.line})"
            related.insert(0, T.DiagnosticRelatedInformation(
                location=T.Location(uri=place.uri_for(f.path), range=place.span_range(f.span)),
                message=f"here, in {Path(f.path).name}"))
        fixes = [f_ for f_ in f.fixes if f_.verified] if fixes_ready else []
        data = {
            "id": finding_id(kr.qualname, i), "kernel": kr.qualname, "version": version, "kind": f.kind,
            "possible": f.possible, "steps": len(f.steps), "fixesPending": not fixes_ready,
            "fixes": [{"title": x.title, "preferred": x.preferred} for x in fixes],
        }
        out.append(T.Diagnostic(
            range=where, message=message, severity=SEVERITY[level], code=f.code,
            code_description=T.CodeDescription(href=docs_url(f.code)), source=SOURCE,
            related_information=related or None, data=data))
    level = level_for(UNMODELED_CODE, DEFAULT_LEVEL[UNMODELED_CODE], overrides)
    for u in kr.unmodeled if level else ():
        foreign = bool(u.path) and u.path != place.path
        out.append(T.Diagnostic(
            range=place.line_range(kr.line if foreign else u.line), severity=SEVERITY[level], code=UNMODELED_CODE,
            code_description=T.CodeDescription(href=docs_url(UNMODELED_CODE)), source=SOURCE,
            message=f"unmodeled: {u.construct}" + (f" (in {Path(u.path).name} line {u.line})" if foreign else "")
            + f": {u.why} (so {kr.qualname} is inconclusive)",
            data={"kernel": kr.qualname, "version": version}))
    level = level_for(INCONCLUSIVE_CODE, DEFAULT_LEVEL[INCONCLUSIVE_CODE], overrides)
    if kr.verdict == "inconclusive" and level:
        out.append(T.Diagnostic(
            range=place.line_range(kr.line), severity=SEVERITY[level], code=INCONCLUSIVE_CODE,
            code_description=T.CodeDescription(href=docs_url(INCONCLUSIVE_CODE)), source=SOURCE,
            message=f"{kr.qualname}: inconclusive: {kr.reason}", data={"kernel": kr.qualname, "version": version}))
    return out

TIMING_NAMES = (("frontend", "front end"), ("lower", "lowering"), ("spin_a", "spin -a"), ("compile", "compile"),
                ("pan", "pan"), ("trail", "trail"))


def timings_text(timings: dict) -> str:
    """` [front end 80 ms, lowering 2 ms, spin -a 20 ms, ...]` for the log (empty without timings);
    `SPIN cached` when the engine's result came from the cache. bench/latency.py parses it."""
    parts = [f"{label} {timings[key] * 1000:.0f} ms" for key, label in TIMING_NAMES if key in timings]
    if timings.get("cached"):
        parts.append("SPIN cached")
    return f" [{', '.join(parts)}]" if parts else ""



KERNEL_DECORATOR = re.compile(r"(?:^|\r)[ \t]*@[\w. \t]*\bkernel\b", re.M)  # \r: old Mac line ends


def has_kernels(text: str) -> bool:
    """Whether a text may define a CuTe kernel (`@cute.kernel` or an alias of it): only those
    files are checked, all others never get a diagnostic."""
    return KERNEL_DECORATOR.search(text) is not None


def error_line(message: str) -> Optional[int]:
    """The line a front-end error names ("syntax error at line 12: ...")."""
    m = re.search(r"\bline (\d+)", message)
    return int(m.group(1)) if m else None


def error_diagnostic(message: str, line: Optional[int], place: Placement) -> T.Diagnostic:
    """The one diagnostic of a document the front end cannot read (a syntax error mid-edit)."""
    rng = place.line_range(line) if line else T.Range(start=T.Position(line=0, character=0),
                                                       end=T.Position(line=0, character=0))
    return T.Diagnostic(range=rng, message=f"cutespin cannot check this file: {message}",
                        severity=T.DiagnosticSeverity.Error, source=SOURCE)


# ------------------------------------------------------------------------------------------ hover


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def relevant_steps(steps: list, lines_of_interest: set, tail: int = HOVER_TAIL) -> list:
    """Indices of the steps worth a hover: the last `tail`, those on the lines of interest, and
    where each role was last seen (for a deadlock: where it is stuck)."""
    keep = set(range(max(len(steps) - tail, 0), len(steps)))
    last_by_role = {}
    for i, s in enumerate(steps):
        if s.line in lines_of_interest and not getattr(s, "path", ""):
            keep.add(i)
        last_by_role[s.process] = i
    keep |= set(last_by_role.values())
    return sorted(keep)


def trace_table(steps: list, place: Placement, keep: Optional[list] = None) -> str:
    """A Markdown table of interleaving steps; skipped runs show as one `...` row."""
    keep = list(range(len(steps))) if keep is None else keep
    rows = ["| step | role | line | operation | barrier after |", "|---:|---|---:|---|---|"]
    prev = -1
    for i in keep:
        if i > prev + 1:
            n = i - prev - 1
            rows.append(f"| … | | | *{n} step{'s' if n != 1 else ''} not shown* | |")
        s = steps[i]
        line = place.current_line(s.line) if s.line and not s.path else ""
        if s.line and s.path:  # inside a sibling module's helper: its file and line
            line = f"{Path(s.path).name}:{s.line}"
        rows.append(f"| {s.index} | {_cell(s.process)} | {line} | {_cell(s.what)} | {_cell(s.state)} |")
        prev = i
    if keep and keep[-1] < len(steps) - 1:
        rows.append(f"| … | | | *{len(steps) - 1 - keep[-1]} more* | |")
    return "\n".join(rows)


def command_link(title: str, command: str, args: list) -> str:
    return f"[{title}](command:{command}?{quote(json.dumps(args))})"


def finding_hover(f, fid: str, place: Placement, hovered_line: Optional[int]) -> str:
    """Markdown for one finding: what is wrong, the interleaving trimmed to the steps that matter
    and a link to the full trace. `hovered_line` is 1-based in the analysed text."""
    interest = {f.span.line} | ({hovered_line} if hovered_line else set())
    head = f"**cutespin {f.code}**: {f.message}"
    if not f.steps:
        return head
    keep = relevant_steps(f.steps, interest)
    parts = [head, "", f"Interleaving found by SPIN ({len(f.steps)} steps, the last one fails):", "",
             trace_table(f.steps, place, keep), ""]
    parts.append(command_link(f"Show the full interleaving ({len(f.steps)} steps)", CMD_SHOW_TRACE,
                              [place.uri, fid]))
    return "\n".join(parts)


def verdict_line(kr) -> str:
    b = kr.bounds
    if kr.verdict == "verified":
        return f"verified within {verified_bounds(b)}"
    if kr.verdict == "inconclusive":
        return f"inconclusive: {kr.reason}"
    codes = sorted({f.code for f in kr.findings})
    return f"counterexample ({', '.join(codes)})"


def kernel_hover(kr) -> str:
    """Markdown for a kernel's def line or one of its synchronization lines: verdict, bounds and
    every assumption the verdict relies on."""
    b = kr.bounds
    s = kr.stats
    lines = [f"**cutespin** `{kr.qualname}`: {verdict_line(kr)}", ""]
    lines.append(f"- search: {s.get('states', 0)} states, {s.get('transitions', 0)} transitions, "
                 f"{s.get('seconds', 0.0):.2f} s (depth bound {b.get('depth')})")
    lines.append(f"- loop bound: {b.get('loop') or 'none (no runtime loops)'}; stages: {b.get('stages') or '-'}; "
                 f"cluster: {b.get('cluster')}" + (f"; {warps}" if (warps := symmetry.describe(b)) else ""))
    if kr.assumptions:
        lines += ["", "Assumptions:"] + [f"- {_cell(a)}" for a in kr.assumptions]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- code actions


def fix_edit(fix, place: Placement, version: Optional[int]) -> Optional[T.TextDocumentEdit]:
    """The fix as a versioned edit of the current document, or None when the lines it touches
    were edited since the check (the fix would no longer apply)."""
    edits = []
    for e in fix.edits:
        if e.path != place.path:
            return None
        if not (place.clean(e.span.line) and place.clean(e.span.end_line)):
            return None
        edits.append(T.TextEdit(range=place.span_range(e.span), new_text=e.new_text))
    return T.TextDocumentEdit(
        text_document=T.OptionalVersionedTextDocumentIdentifier(uri=place.uri, version=version), edits=edits)


def quick_fixes(f, place: Placement, version: Optional[int], diagnostic: Optional[T.Diagnostic]) -> list:
    out = []
    for fix in f.fixes:
        if not fix.verified:
            continue
        edit = fix_edit(fix, place, version)
        if edit is None:
            continue
        out.append(T.CodeAction(
            title=f"{fix.title} (verified by SPIN)", kind=T.CodeActionKind.QuickFix,
            diagnostics=[diagnostic] if diagnostic is not None else None, is_preferred=fix.preferred or None,
            edit=T.WorkspaceEdit(document_changes=[edit])))
    return out


def _overlaps(a: T.Range, b: T.Range) -> bool:
    a0, a1 = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b0, b1 = (b.start.line, b.start.character), (b.end.line, b.end.character)
    if a0 == a1 == b0 == b1:
        return True  # two insertions at one point: their order would be ambiguous
    return a0 < b1 and b0 < a1


def fix_all(findings_with_place: list, version: Optional[int]) -> Optional[T.CodeAction]:
    """`source.fixAll.cutespin`: the preferred verified fix of every finding whose edits do not
    overlap an edit already taken."""
    taken: list = []
    uri = None
    n = 0
    for f, place in findings_with_place:
        fix = next((x for x in f.fixes if x.verified and x.preferred), None)
        if fix is None:
            continue
        edit = fix_edit(fix, place, version)
        if edit is None or any(_overlaps(e.range, t.range) for e in edit.edits for t in taken):
            continue
        taken += edit.edits
        uri = place.uri
        n += 1
    if not taken:
        return None
    return T.CodeAction(
        title=f"cutespin: apply {n} verified fix{'es' if n != 1 else ''}", kind=FIX_ALL_KIND,
        edit=T.WorkspaceEdit(document_changes=[T.TextDocumentEdit(
            text_document=T.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=taken)]))


# ------------------------------------------------------------------------------------- code lens


def kernel_lenses(kr, place: Placement, fixes_pending: bool = False) -> list:
    """Above each kernel: its verdict (click: the trace or the model) and "re-check"."""
    rng = place.line_range(kr.line)
    s = kr.stats
    title = f"cutespin: {verdict_line(kr) if kr.verdict != 'inconclusive' else 'inconclusive'}"
    title += f" · {s.get('states', 0)} states · {s.get('seconds', 0.0):.2f} s"
    if kr.findings and fixes_pending:
        title += " · verifying fixes…"
    if kr.findings and kr.findings[0].steps:
        cmd = T.Command(title=title, command=CMD_SHOW_TRACE, arguments=[place.uri, finding_id(kr.qualname, 0)])
    else:
        cmd = T.Command(title=title, command=CMD_SHOW_PROMELA, arguments=[place.uri, kr.qualname])
    return [T.CodeLens(range=rng, command=cmd),
            T.CodeLens(range=rng, command=T.Command(title="re-check", command=CMD_RECHECK,
                                                    arguments=[place.uri, kr.qualname]))]


# ------------------------------------------------------------------------------------ inlay hints


def inlay_hints(inits: list, place: Placement) -> list:
    """After each barrier initialisation (or pipeline `create`): the arrivals per phase the model
    derived vs the expected count; one hint per source line (a barrier array shares its line)."""
    by_line: dict = {}
    for b in inits:
        by_line.setdefault((b["end_line"], b["end_column"]), []).append(b)
    out = []
    for (line, column), group in sorted(by_line.items()):
        kinds = sorted({(b["per_phase"], b["expected"]) for b in group}, key=str)
        labels = []
        for per_phase, expected in kinds:
            if per_phase is None:
                labels.append(f"arrivals/phase vary (init {expected})")
            elif per_phase == expected:
                labels.append(f"{per_phase} arrival{'s' if per_phase != 1 else ''}/phase = init {expected}")
            else:
                labels.append(f"{per_phase} arrival{'s' if per_phase != 1 else ''}/phase ≠ init {expected}")
        n = len(group)
        label = "; ".join(labels) + (f" (×{n} barriers)" if n > 1 else "")
        tooltip = "\n".join(f"{b['barrier']}: init {b['expected']}, "
                             f"{b['per_phase'] if b['per_phase'] is not None else 'varying'} arrivals per phase "
                             f"({b['arrivals']} in the longest run)" for b in group)
        out.append(T.InlayHint(position=place.position(line, column), label=f"cutespin: {label}",
                               padding_left=True, tooltip=tooltip))
    return out


# ------------------------------------------------------------------------------------ commands


def trace_json(f, place: Placement) -> list:
    return [{"step": s.index, "role": s.process,
             "line": place.current_line(s.line) if s.line and not s.path else None,
             "operation": s.what, "barrier": s.state} for s in f.steps]


def promela_line_map(pm, place: Placement) -> dict:
    """Promela line -> current source line (1-based), for the lines that come from the source."""
    out = {}
    for n, info in sorted(pm.lines.items()):
        span = getattr(info, "span", None)
        if span is not None and not span.path:
            out[str(n)] = place.current_line(span.line)
    return out
