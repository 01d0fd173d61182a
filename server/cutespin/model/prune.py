"""Drop the visibility variables of a Promela model that are zero in every reachable state.

The lowering keeps a visibility set per (holder, region): every lane class of every warp, every
waited barrier's release sets, every named and cluster barrier's, every flag's. Most pairs never
carry a bit: a barrier of one CTA never releases accesses to another CTA's shared memory, a warp
that never waits on a barrier whose phases carry a region's accesses never sees them. Those
variables still cost state-vector bytes in every state and statements in every access (each
access clears its bit from every holder), which is most of the model on multi-CTA kernels.

Every visibility variable is an `unsigned` bit field that starts at 0 and changes only through
plain assignments whose right-hand sides are built from `|`, `&`, `~`, variables and literals.
The variables that can ever be non-zero are the least fixpoint of "some assignment's right-hand
side can be non-zero, given which variables can". The others are 0 in every state, so:
- assignments to them are dropped (they assign 0);
- `x = x | e` with `e` always 0 is dropped (it changes nothing);
- their reads become the literal `0`, and their declarations go.
The states and the transitions of the model are the same (exact); line numbers are kept, so the
line table still maps every Promela line to its source.
"""
from __future__ import annotations

import re
from typing import Optional

_DECL = re.compile(r"unsigned ([A-Za-z_]\w*) : \d+;?[ ]?")
# An assignment `name = rhs`: not `==`, `<=`, `>=`, `!=`, and not an array element. The
# right-hand side ends at `;`, `}`, `::` (the next option of an `if`), `fi` or the line's end:
# the lowering writes no `;`, `}` or `:` inside an expression (`_trim` takes off a `fi`).
_ASSIGN = re.compile(r"(?<![\w\]=!<>])([A-Za-z_]\w*) = (?!=)([^;}:\n]*)")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(.))")
_MARK = "\x01"  # stands for a dropped assignment until the separators around it are removed


def prune_zero_variables(text: str) -> str:
    """The model with every always-zero visibility variable removed (see the module text)."""
    lines = text.split("\n")
    names = {m.group(1) for line in lines if "unsigned" in line for m in _DECL.finditer(line)}
    if not names:
        return text
    assigns = []  # (line, start, end, target, right-hand side)
    parsed: dict = {}
    for i, line in enumerate(lines):
        if " = " not in line:
            continue
        for m in _ASSIGN.finditer(line):
            if m.group(1) in names:
                rhs = _trim(m.group(2))
                if rhs not in parsed:
                    parsed[rhs] = _parse(rhs, names)
                # `x = x | ...`: x itself one of the top-level disjuncts
                self_or = m.group(1) in (part.strip() for part in rhs.split("|"))
                assigns.append((i, m.start(1), m.start(2) + len(rhs), m.group(1), parsed[rhs], self_or))
    nonzero = _nonzero(assigns)
    dead = names - nonzero
    drop: dict = {}  # line -> [(start, end)] of assignments to remove
    for i, start, end, target, rhs, self_or in assigns:
        if target in dead or self_or and _is_noop(target, rhs, nonzero):
            drop.setdefault(i, []).append((start, end))
    if not dead and not drop:
        return text
    out = []
    for i, line in enumerate(lines):
        if i in drop:
            line = _remove_marks(_marked(line, drop[i]))
        if dead and "unsigned" in line:
            line = _DECL.sub(lambda m: "" if m.group(1) in dead else m.group(0), line).rstrip()
            if line.strip() == ";":
                line = ""
        if dead:
            line = _IDENT.sub(lambda m: "0" if m.group(0) in dead else m.group(0), line)
        out.append(line)
    return "\n".join(out)


def _trim(rhs: str) -> str:
    rhs = rhs.rstrip()
    while rhs.endswith(" fi"):
        rhs = rhs[:-3].rstrip()
    return rhs


# A right-hand side as a sum of products: it may be non-zero exactly when, for some term, every
# visibility variable of the term may be (literals other than 0, `~x` and variables that are not
# visibility variables may always be non-zero, so they leave the term's set; a 0 factor drops the
# term). None: an expression of another shape, taken as possibly non-zero.
Terms = Optional[tuple]  # tuple[frozenset[str], ...]


def _parse(text: str, names: set) -> Terms:
    tokens = list(_tokens(text))
    pos = [0]

    def peek() -> Optional[str]:
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take() -> str:
        pos[0] += 1
        return tokens[pos[0] - 1]

    def disj() -> list:
        terms = conj()
        while peek() == "|":
            take()
            terms = terms + conj()
        return terms

    def conj() -> list:
        terms = unary()
        while peek() == "&":
            take()
            right = unary()
            terms = [a | b for a in terms for b in right]
        return terms

    def unary() -> list:
        t = peek()
        if t == "~":
            take()
            unary()
            return [frozenset()]  # ~0 is all ones: may be non-zero whatever its operand
        if t == "(":
            take()
            terms = disj()
            if peek() != ")":
                raise ValueError(text)
            take()
            return terms
        if t is None:
            raise ValueError(text)
        take()
        if t.isdigit():
            return [frozenset()] if int(t) else []
        if re.fullmatch(r"[A-Za-z_]\w*", t):
            return [frozenset({t})] if t in names else [frozenset()]
        raise ValueError(text)

    try:
        terms = disj()
    except ValueError:
        return None
    return tuple(terms) if peek() is None else None


def _tokens(text: str):
    for m in _TOKEN.finditer(text):
        if m.group(1) is not None:
            yield m.group(1)
        elif m.group(2) is not None:
            yield m.group(2)
        elif m.group(3) is not None and not m.group(3).isspace():
            yield m.group(3)


def _maybe_nonzero(terms: Terms, nonzero: set) -> bool:
    return terms is None or any(t <= nonzero for t in terms)


def _nonzero(assigns: list) -> set:
    """The variables some reachable state may hold non-zero: a worklist over the assignments."""
    readers: dict = {}  # variable -> assignments whose right-hand side reads it
    for a in assigns:
        for v in set().union(*a[4]) if a[4] else ():
            readers.setdefault(v, []).append(a)
    nonzero: set = set()
    work = list(assigns)
    while work:
        target, rhs = work.pop()[3:5]
        if target in nonzero or not _maybe_nonzero(rhs, nonzero):
            continue
        nonzero.add(target)
        work.extend(readers.get(target, ()))
    return nonzero


def _is_noop(target: str, rhs: Terms, nonzero: set) -> bool:
    """`x = x | e` (the caller checked the shape) where `e` is 0 in every state: every term but
    `x` itself has an always-zero variable."""
    if rhs is None:
        return False
    return not any(t <= nonzero for t in rhs if t != frozenset({target}))


def _marked(line: str, spans: list) -> str:
    """`line` with each span replaced by the mark (in one pass: a line can hold thousands)."""
    pieces, at = [], 0
    for start, end in sorted(spans):
        pieces += [line[at:start], _MARK]
        at = end
    pieces.append(line[at:])
    return "".join(pieces)


def _remove_marks(line: str) -> str:
    """Remove dropped assignments with their separators; `skip` where one was all a block held."""
    line = re.sub(r";\s*" + _MARK, "", line)
    line = re.sub(_MARK + r";\s*", "", line)
    return line.replace(_MARK, "skip")
