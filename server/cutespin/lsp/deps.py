"""Which files an open kernel document imports, so a change on disk can re-check it.

Two sources: the document's own import lines (below), and the sibling modules of the package
whose code the last check's models actually include (`KernelModel.deps`: helpers and pipeline
subclasses reached through re-exports and other modules' imports, which the import lines of the
document do not name).

Resolution is deliberately simple and never imports anything: `import a.b` and `from a.b import c`
are looked up as `a/b.py`, `a/b/__init__.py` and `a/b/c.py` under each root (the workspace
folders, `extraPaths` and the document's own folder); `from .x import y` relative to the
document's package.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

IMPORT_RE = re.compile(r"^\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)", re.M)
FROM_RE = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\s+\(?\s*([\w, \t\n]+?)\s*\)?\s*(?:#.*)?$", re.M)


def _candidates(base: Path, dotted: str) -> list:
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        return [base / "__init__.py"]
    mod = base.joinpath(*parts)
    return [mod.with_suffix(".py"), mod / "__init__.py"]


def dependency_paths(text: str, doc_path: Path, roots: Iterable[Path]) -> set:
    """Files (resolved or not) the document may import."""
    roots = [Path(r) for r in roots] + [doc_path.parent]
    out = set()
    for m in IMPORT_RE.finditer(text):
        for name in m.group(1).split(","):
            name = name.strip().split(" as ")[0].strip()
            for r in roots:
                out.update(_candidates(r, name))
    for m in FROM_RE.finditer(text):
        dots, module, names = m.group(1), m.group(2), m.group(3)
        names = [n.strip().split(" as ")[0].strip() for n in names.replace("\n", ",").split(",") if n.strip()]
        if dots:
            base = doc_path.parent
            for _ in range(len(dots) - 1):
                base = base.parent
            bases = [base]
        else:
            bases = roots
        for b in bases:
            out.update(_candidates(b, module))
            for n in names:
                out.update(_candidates(b, f"{module}.{n}" if module else n))
    return {_norm(p) for p in out}


def _norm(p: Path) -> Path:
    try:
        return p.resolve()
    except OSError:
        return p


def depends_on(text: str, doc_path: Path, changed: Path, roots: Iterable[Path]) -> bool:
    return _norm(changed) in dependency_paths(text, doc_path, roots)


def model_depends_on(doc_state, changed: Path) -> bool:
    """Whether the last check of the document followed code into `changed`."""
    target = str(_norm(changed))
    for entry in getattr(doc_state, "kernels", {}).values():
        model = getattr(entry.result, "model", None)
        if model is not None and target in getattr(model, "deps", ()):
            return True
    return False
