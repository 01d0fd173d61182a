"""Output formats: text (ruff style), json (the stable contract), sarif."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from ..api import __version__, verified_bounds
from ..findings import CODES, INCONCLUSIVE_CODE, UNMODELED_CODE, docs_url

JSON_VERSION = 1


def to_json(results: list, errors: list, tools: dict) -> str:
    doc = {
        "version": JSON_VERSION,
        "tool": {"cutespin": __version__, "spin": tools.get("spin"), "compiler": tools.get("compiler")},
        "errors": [{"path": p, "message": m} for p, m in errors],
        "files": [r.to_json() for r in results],
    }
    return json.dumps(doc, indent=2)


def to_text(results: list, errors: list, *, show_trace: bool = True, verbose: bool = False) -> str:
    out = []
    for fr in results:
        for kr in fr.kernels:
            for f in kr.findings:
                out.append(f"{f.path or fr.path}:{f.span.line}:{f.span.column}: {f.code} {f.message}")
                if show_trace:
                    for r in f.related:
                        out.append(f"    {r.path}:{r.span.line}: {r.message}")
                for fix in f.fixes:
                    mark = "verified" if fix.verified else "not verified"
                    out.append(f"    fix ({mark}): {fix.title}")
            for u in kr.unmodeled:
                # A construct in a sibling module of the package is reported where it is.
                out.append(f"{u.path or fr.path}:{u.line}:1: {UNMODELED_CODE} unmodeled: {u.construct}: {u.why}")
            if kr.verdict == "inconclusive":
                out.append(f"{fr.path}:{kr.line}:1: {INCONCLUSIVE_CODE} {kr.qualname}: inconclusive: {kr.reason}")
            if verbose or kr.verdict != "counterexample":
                summary = f"{fr.path}:{kr.line}: {kr.qualname}: {kr.verdict}"
                if kr.verdict == "verified":
                    summary += f" within {verified_bounds(kr.bounds)} ({kr.bounds.get('states')} states)"
                out.append(summary)
                if verbose:
                    for a in kr.assumptions:
                        out.append(f"    assumes: {a}")
    for path, msg in errors:
        out.append(f"{path}: error: {msg}")
    n_find = sum(len(k.findings) for fr in results for k in fr.kernels)
    n_k = sum(len(fr.kernels) for fr in results)
    n_inc = sum(1 for fr in results for k in fr.kernels if k.verdict == "inconclusive")
    out.append(f"Checked {n_k} kernel{'s' if n_k != 1 else ''} in {len(results)} file"
               f"{'s' if len(results) != 1 else ''}: {n_find} finding{'s' if n_find != 1 else ''}, "
               f"{n_inc} inconclusive.")
    return "\n".join(out) + "\n"


def to_sarif(results: list, errors: list, tools: dict) -> str:
    rules = []
    for kind, code in sorted(CODES.items(), key=lambda kv: kv[1]):
        rules.append({"id": code, "name": kind, "shortDescription": {"text": kind},
                      "helpUri": docs_url(code)})
    rules.append({"id": UNMODELED_CODE, "name": "unmodeled", "shortDescription": {"text": "unmodeled construct"},
                  "helpUri": docs_url(UNMODELED_CODE)})
    rules.append({"id": INCONCLUSIVE_CODE, "name": "inconclusive", "shortDescription": {"text": "inconclusive verdict"},
                  "helpUri": docs_url(INCONCLUSIVE_CODE)})
    res = []

    def uri(path):
        p = Path(path)
        return p.resolve().as_uri() if p.is_absolute() else quote(p.as_posix())

    def region(span):
        return {"startLine": span.line, "startColumn": span.column, "endLine": span.end_line,
                "endColumn": span.end_column}

    for fr in results:
        for kr in fr.kernels:
            for f in kr.findings:
                item = {
                    "ruleId": f.code, "level": "warning" if f.possible else "error", "message": {"text": f.message},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(f.path or fr.path)},
                                                        "region": region(f.span)}}],
                    "relatedLocations": [
                        {"id": i, "message": {"text": r.message},
                         "physicalLocation": {"artifactLocation": {"uri": uri(r.path)}, "region": region(r.span)}}
                        for i, r in enumerate(f.related)],
                }
                if f.fixes:
                    item["fixes"] = [{
                        "description": {"text": fx.title + ("" if fx.verified else " (not verified)")},
                        "artifactChanges": [{"artifactLocation": {"uri": uri(e.path)},
                                             "replacements": [{"deletedRegion": region(e.span),
                                                               "insertedContent": {"text": e.new_text}}]}
                                            for e in fx.edits]} for fx in f.fixes]
                res.append(item)
            for u in kr.unmodeled:
                res.append({"ruleId": UNMODELED_CODE, "level": "note",
                            "message": {"text": f"unmodeled: {u.construct}: {u.why}"},
                            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(u.path or fr.path)},
                                                                "region": {"startLine": u.line}}}]})
            if kr.verdict == "inconclusive":
                res.append({"ruleId": INCONCLUSIVE_CODE, "level": "warning",
                            "message": {"text": f"{kr.qualname}: inconclusive: {kr.reason}"},
                            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(fr.path)},
                                                                "region": {"startLine": kr.line}}}]})
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "cutespin", "version": __version__,
                                      "informationUri": "https://github.com/cutespin/cutespin", "rules": rules}},
                  "results": res,
                  "invocations": [{"executionSuccessful": not errors,
                                   "toolExecutionNotifications": [{"level": "error", "message": {"text": f"{p}: {m}"}}
                                                                  for p, m in errors]}]}],
    }
    return json.dumps(doc, indent=2)
