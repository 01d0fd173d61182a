"""Keeping a result's lines right while the document changes after the check that produced it.

A check runs on one version of a document; the user may keep typing. `LineHistory` records every
edit since then (by document version) and maps a 0-based line of an older version to the current
one. A mapped line is *clean* when no edit touched that line's text (it may have moved): quick
fixes are only offered for clean lines, diagnostics are always shown (on the nearest line).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class RangeEdit:
    """One incremental change: 0-based (line, character) start and end, and the new text."""

    start_line: int
    start_char: int
    end_line: int
    end_char: int
    text: str

    def map_line(self, line: int) -> tuple:
        """(new line, clean) for the start of `line`."""
        nl = self.text.count("\n")
        delta = nl - (self.end_line - self.start_line)
        if line < self.start_line:
            return line, True
        if line > self.end_line:
            return line + delta, True
        if line == self.end_line and self.end_char == 0 and (self.start_line < line or self.start_char == 0):
            # The line starts exactly where the replaced range ends: it follows the new text.
            tail = self.text.rsplit("\n", 1)[-1] if nl else self.text
            starts_line = (tail == "") and (nl > 0 or self.start_char == 0)
            return self.start_line + nl, starts_line
        # The line's own text was edited (or the line was deleted): keep it where the edit starts.
        return self.start_line, False


class WholeEdit:
    """A whole-document change: old and new lines are matched with difflib."""

    def __init__(self, old_text: str, new_text: str):
        old, new = old_text.splitlines(), new_text.splitlines()
        self.n_new = len(new)
        self.opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()

    def map_line(self, line: int) -> tuple:
        for tag, i1, i2, j1, _ in self.opcodes:
            if i1 <= line < i2:
                if tag == "equal":
                    return j1 + (line - i1), True
                return j1, False
        return self.n_new, False


@dataclass
class LineHistory:
    """Edits applied to one open document, each tagged with the version it produced."""

    steps: list = field(default_factory=list)  # [(version, [edits])]

    def record(self, version: int, edits: list) -> None:
        if edits:
            self.steps.append((version, list(edits)))

    def map_line(self, line: int, from_version: Optional[int]) -> tuple:
        """(line in the current version, clean) for a line of `from_version`."""
        clean = True
        for version, edits in self.steps:
            if from_version is not None and version <= from_version:
                continue
            for e in edits:
                line, ok = e.map_line(line)
                clean = clean and ok
        return max(line, 0), clean

    def changed_since(self, version: Optional[int]) -> bool:
        return any(version is None or v > version for v, _ in self.steps)

    def forget_before(self, version: Optional[int]) -> None:
        """Drop edits no stored result needs any more (all results are at `version` or later)."""
        if version is not None:
            self.steps = [(v, e) for v, e in self.steps if v > version]
