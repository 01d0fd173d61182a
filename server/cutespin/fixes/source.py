"""Locating nodes with libcst and turning them into position-based text edits."""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from ..findings import Edit
from ..frontend.discover import collect_aliases
from ..ir import Span


class Source:
    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.module = cst.parse_module(text)
        self.wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.pos = self.wrapper.resolve(PositionProvider)
        self.parent = self.wrapper.resolve(ParentNodeProvider)
        self.aliases = collect_aliases(self.module)

    # ------------------------------------------------------------------ lookups
    def code(self, node) -> str:
        return self.module.code_for_node(node)

    def line_of(self, node) -> int:
        return self.pos[node].start.line

    def span_of(self, node) -> Span:
        p = self.pos[node]
        return Span(p.start.line, p.start.column + 1, p.end.line, p.end.column + 1)

    def nodes(self, kind) -> Iterator:
        for node in self.pos:
            if isinstance(node, kind):
                yield node

    def call_at(self, span: Span) -> Optional[cst.Call]:
        for node in self.nodes(cst.Call):
            p = self.pos[node].start
            if p.line == span.line and p.column + 1 == span.column:
                return node
        return self.call_at_line(span.line)

    def call_at_line(self, line: int, suffix: str = "") -> Optional[cst.Call]:
        best = None
        for node in self.nodes(cst.Call):
            if self.pos[node].start.line == line and self.code(node.func).endswith(suffix):
                if best is None or self.pos[node].start.column < self.pos[best].start.column:
                    best = node
        return best

    def ancestors(self, node):
        while node in self.parent:
            node = self.parent[node]
            yield node

    def enclosing_elect(self, span: Span) -> Optional[cst.With]:
        call = self.call_at(span)
        if call is None:
            return None
        for anc in self.ancestors(call):
            if isinstance(anc, cst.With) and any("elect_one" in self.code(i.item) for i in anc.items):
                return anc
            if isinstance(anc, (cst.FunctionDef, cst.For, cst.While, cst.If)):
                return None
        return None

    def enclosing_statement(self, node):
        for anc in [node] + list(self.ancestors(node)):
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return anc
        return None

    def enclosing_elect_or_statement(self, span: Span):
        w = self.enclosing_elect(span)
        if w is not None:
            return w
        call = self.call_at(span)
        return self.enclosing_statement(call) if call is not None else None

    def statement_at_line(self, line: int):
        call = self.call_at_line(line)
        if call is not None:
            return self.enclosing_statement(call)
        for node in self.nodes(cst.SimpleStatementLine):
            if self.pos[node].start.line == line:
                return node
        return None

    def top_level_statement(self, node, fn: cst.FunctionDef):
        """The statement of `fn`'s body that contains `node`."""
        body = set(fn.body.body)
        for anc in [node] + list(self.ancestors(node)):
            if anc in body:
                return anc
        return None

    def group_size_argument(self, create_call: cst.Call, keyword: str):
        """The size argument of the `CooperativeGroup(agent, size)` passed as `keyword=` to a
        pipeline's create (directly or through a local variable)."""
        arg = next((a.value for a in create_call.args if a.keyword is not None and a.keyword.value == keyword), None)
        if isinstance(arg, cst.Name):
            fn = next((a for a in self.ancestors(create_call) if isinstance(a, cst.FunctionDef)), None)
            arg = self._assigned_value(fn, arg.value) if fn is not None else None
        if isinstance(arg, cst.Call) and self.code(arg.func).endswith("CooperativeGroup"):
            sized = [a for a in arg.args if a.keyword is None or a.keyword.value == "size"]
            if len(sized) >= 2:
                return sized[1].value
        return None

    def group_agent_argument(self, create_call: cst.Call, keyword: str):
        """The agent argument of a `CooperativeGroup(agent)` given without a size."""
        arg = next((a.value for a in create_call.args if a.keyword is not None and a.keyword.value == keyword), None)
        if isinstance(arg, cst.Name):
            fn = next((a for a in self.ancestors(create_call) if isinstance(a, cst.FunctionDef)), None)
            arg = self._assigned_value(fn, arg.value) if fn is not None else None
        if isinstance(arg, cst.Call) and self.code(arg.func).endswith("CooperativeGroup") and len(arg.args) == 1:
            return arg.args[0].value
        return None

    def parent_call(self, node) -> Optional[cst.Call]:
        return next((a for a in self.ancestors(node) if isinstance(a, cst.Call)), None)

    def _assigned_value(self, fn, name: str):
        found = []

        class V(cst.CSTVisitor):
            def visit_Assign(self, n):
                if len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) and n.targets[0].target.value == name:
                    found.append(n.value)

        fn.visit(V())
        return found[-1] if len(found) == 1 else None

    def function_at_line(self, line: int) -> Optional[cst.FunctionDef]:
        for node in self.nodes(cst.FunctionDef):
            if self.pos[node.name].start.line == line:
                return node
        return None

    def alias_for(self, qualname: str) -> Optional[str]:
        for local, full in self.aliases.items():
            if full == qualname:
                return local
        return None

    def with_body_dedented(self, with_stmt: cst.With) -> Optional[str]:
        body = with_stmt.body
        if not isinstance(body, cst.IndentedBlock):
            return None
        indent = self.indent_of(self.line_of(with_stmt))
        parts = []
        for i, stmt in enumerate(body.body):
            code = self.module.code_for_node(stmt).strip("\n")
            lines = [ln.strip() for ln in code.splitlines()]
            if len(lines) != 1:
                return None
            parts.append(lines[0] if i == 0 else indent + lines[0])
        return "\n".join(parts)

    def indent_of(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip())]

    def find_int_argument(self, value: int, keywords: tuple, within=None):
        """The argument node of a `keywords=` argument: the literal equal to `value`, or the only
        such argument inside `within` (whatever expression it is)."""
        calls = _calls_in(within) if within is not None else list(self.nodes(cst.Call))
        cands = []
        for call in calls:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in keywords:
                    v = arg.value
                    if isinstance(v, cst.Integer) and int(v.value, 0) == value:
                        return v
                    cands.append(v)
        return cands[0] if len(cands) == 1 else None

    def unflipped_wraps(self):
        """(wait call, phase variable, wrap `if`) where a loop waits with `phase` as the parity,
        wraps its stage index in an `if` block but never flips `phase` there."""
        out = []
        for loop in self.nodes((cst.For, cst.While)):
            waits = [c for c in _calls_in(loop.body) if self.code(c.func).endswith("mbarrier_wait") and len(c.args) >= 2
                     and isinstance(c.args[1].value, cst.Name)]
            if not waits:
                continue
            for wrap in _ifs_in(loop.body):
                assigned = _assigned_names(wrap.body)
                for w in waits:
                    phase = w.args[1].value.value
                    resets = [n for n in assigned if n != phase]
                    if resets and phase not in assigned and not _flips_elsewhere(loop.body, phase):
                        out.append((w, phase, wrap))
        return out


def _calls_in(node):
    found = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n):
            found.append(n)

    node.visit(V())
    return found


def _ifs_in(node):
    found = []

    class V(cst.CSTVisitor):
        def visit_If(self, n):
            found.append(n)

    node.visit(V())
    return found


def _assigned_names(node) -> set:
    names = set()

    class V(cst.CSTVisitor):
        def visit_Assign(self, n):
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    names.add(t.target.value)

        def visit_AugAssign(self, n):
            if isinstance(n.target, cst.Name):
                names.add(n.target.value)

    node.visit(V())
    return names


def _flips_elsewhere(body, name: str) -> bool:
    return name in _assigned_names(body)


# ---------------------------------------------------------------------- edits


def edit(path: str, span_text) -> Edit:
    span, text = span_text
    return Edit(path, span, text)


def insert_before(src: Source, line: int, statement: str):
    indent = src.indent_of(line)
    return Span(line, 1, line, 1), f"{indent}{statement}\n"


def insert_after(src: Source, stmt, statement: str):
    line = src.pos[stmt].end.line + 1
    indent = src.indent_of(src.pos[stmt].start.line)
    return Span(line, 1, line, 1), f"{indent}{statement}\n"


def replace_node(src: Source, node, new_text: str):
    return src.span_of(node), new_text


def insert_import(src: Source, statement: str):
    last = 0
    for stmt in src.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            last = src.pos[stmt].end.line
    line = last + 1
    return Span(line, 1, line, 1), statement + "\n"


def add_keyword(src: Source, call: cst.Call, kw: str, value: str):
    last = call.args[-1]
    end = src.pos[last.value].end
    return Span(end.line, end.column + 1, end.line, end.column + 1), f", {kw}={value}"


def insert_into_block_end(src: Source, block_owner, statement: str):
    body = block_owner.body
    last = body.body[-1]
    end_line = src.pos[last].end.line
    indent = src.indent_of(src.pos[last].start.line)
    line = end_line + 1
    return Span(line, 1, line, 1), f"{indent}{statement}\n"


def append_to_function(src: Source, fn: cst.FunctionDef, statements: list):
    last = fn.body.body[-1]
    indent = src.indent_of(src.pos[last].start.line)
    line = src.pos[fn].end.line + 1
    return Span(line, 1, line, 1), "".join(f"{indent}{s}\n" for s in statements)


def _offset(lines: list, line: int, column: int) -> int:
    if line > len(lines):
        return sum(len(x) for x in lines)
    return sum(len(x) for x in lines[: line - 1]) + column - 1


def apply_edits(text: str, edits: list) -> str:
    """Apply non-overlapping edits (1-based line/column spans in code points)."""
    lines = text.splitlines(keepends=True)
    if text and not text.endswith("\n"):
        pass
    spans = sorted(edits, key=lambda e: (e.span.line, e.span.column), reverse=True)
    out = text
    for e in spans:
        start = _offset(lines, e.span.line, e.span.column)
        end = _offset(lines, e.span.end_line, e.span.end_column)
        out = out[:start] + e.new_text + out[end:]
    return out
