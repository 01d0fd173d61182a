"""Find kernels, their classes, imports, constants, launch configuration and pins.

Static only: the file is parsed with libcst and never imported or executed.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..ir import Span

PIN_RE = re.compile(r"#\s*cutespin\s*:\s*(?!ignore)(.*)$")
PIN_ITEM_RE = re.compile(r"([A-Za-z_][\w-]*)\s*=\s*([^\s,]+)")


@dataclass
class KernelSite:
    """A `@cute.kernel` function found in the source."""

    name: str
    qualname: str
    node: cst.FunctionDef
    cls: Optional[cst.ClassDef]
    pins: dict  # from a `# cutespin: k=v` comment above the kernel
    pin_line: Optional[int] = None


@dataclass
class LaunchSite:
    """The `.launch(...)` of a kernel and the host function it sits in."""

    host: cst.FunctionDef
    call: cst.Call  # the kernel call `self.kernel(args...)`
    launch: cst.Call  # the `.launch(grid=..., block=..., cluster=...)` call


@dataclass
class UnpackedItem:
    """A module constant bound by unpacking a value (`CFG, _TMA = make_cfg(PARAMS)`): item
    `index` of the value of `value` (a cst expression), in place of an expression of its own."""

    value: cst.BaseExpression
    index: int


@dataclass
class ModuleInfo:
    wrapper: MetadataWrapper
    module: cst.Module
    positions: dict
    aliases: dict  # local name -> fully qualified name
    constants: dict  # module-level NAME -> cst expression (or UnpackedItem)
    functions: dict  # module-level function name -> FunctionDef
    classes: dict  # class name -> ClassDef
    kernels: list = field(default_factory=list)  # list[KernelSite]
    launches: dict = field(default_factory=dict)  # kernel qualname -> LaunchSite
    path: str = ""  # set for a sibling module of the package (spans carry it); "" for the analyzed file
    name: Optional[str] = None  # dotted module name within the package, when known
    project: object = None  # frontend.project.Project: resolves imports of the package
    source_lines: list = field(default_factory=list)  # a sibling module's lines (suppression comments)
    # Source text of nodes by identity: the interpreter asks for the same expressions' text (keys,
    # bound texts) in every warp and configuration, and libcst regenerates it on each call.
    texts: dict = field(default_factory=dict, repr=False, compare=False)
    # Facts the interpreter derives once from the whole module (interp `_state_index_names`).
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def span(self, node: cst.CSTNode) -> Span:
        pos = self.positions[node]
        # libcst columns are 0-based code points; the contract is 1-based.
        return Span(pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1, self.path)

    def code(self, node: cst.CSTNode) -> str:
        text = self.texts.get(id(node))
        if text is None or text[0] is not node:
            text = self.texts[id(node)] = (node, self.module.code_for_node(node))
        return text[1]

    def flat_code(self, node: cst.CSTNode) -> str:
        """The node's source on one line (whitespace runs as one space)."""
        key = ("flat", id(node))
        text = self.texts.get(key)
        if text is None or text[0] is not node:
            text = self.texts[key] = (node, " ".join(self.code(node).split()))
        return text[1]


def qualify(expr: cst.BaseExpression, aliases: dict) -> Optional[str]:
    """The dotted name an expression refers to through the file's imports, or None."""
    if isinstance(expr, cst.Name):
        return aliases.get(expr.value)
    if isinstance(expr, cst.Attribute):
        base = qualify(expr.value, aliases)
        return f"{base}.{expr.attr.value}" if base else None
    return None


# The DSL's numeric types. They are defined in `cutlass.base_dsl.typing` and re-exported by
# `cutlass`, `cutlass.cute`, `cutlass.cute.typing` and `cutlass.cutlass_dsl`; kernels import
# them from any of these (`from cutlass.cute.typing import Int32`), and all name one type.
NUMERIC_TYPES = frozenset({
    "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16", "Uint32", "Uint64", "Boolean",
    "Float16", "BFloat16", "Float32", "Float64", "TFloat32", "Float8E4M3FN", "Float8E5M2",
})
NUMERIC_REEXPORTS = ("cute.typing", "cute", "cutlass_dsl", "base_dsl.typing", "base_dsl")
# Compile-time control the DSL defines in `cutlass.cutlass_dsl` and `cutlass` re-exports: cuDNN's
# MoE scheduler imports `const_expr` from `cutlass.cutlass_dsl`, and unresolved there each of its
# `if const_expr(self.scenario == ...)` was a runtime branch per warp.
CONTROL_REEXPORTS = frozenset({"const_expr", "range_constexpr", "range", "if_generate"})


def canonical(qualname: str) -> str:
    """Normalise a qualified DSL name: `cutlass.cute.arch.mbar.mbarrier_wait` -> `arch.mbarrier_wait`,
    `cutlass.cute.typing.Int32` -> `Int32`."""
    q = qualname
    if q.startswith("cutlass."):
        q = q[len("cutlass."):]
    module, _, last = q.rpartition(".")
    if last in NUMERIC_TYPES and module in NUMERIC_REEXPORTS:
        return last
    if module == "cutlass_dsl" and last in CONTROL_REEXPORTS:
        return last
    if q.startswith("cute.arch."):
        return "arch." + q.rsplit(".", 1)[1]
    if q.startswith("experimental.primitives."):
        # The same primitive layer under its older import path (cuDNN's SDPA kernels:
        # `from cutlass.experimental import primitives as nvvm`).
        return q[len("experimental."):]
    if q.startswith("pipeline."):
        return "pipeline." + q.rsplit(".", 1)[1]
    if q.startswith(("utils.", "memory.")) and q.endswith("SmemAllocator"):
        return "SmemAllocator"
    if q.startswith("utils.sm100."):
        # The DSL's newer name of `utils.blackwell_helpers` (make_trivial_tiled_mma, ...).
        return "utils.blackwell_helpers." + q[len("utils.sm100."):]
    return q


def _dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def relative_base(package: Optional[str], dots: int) -> Optional[str]:
    """The package a relative import with `dots` leading dots names, from inside `package`
    (None when it is unknown or the dots climb above the top level)."""
    if package is None:
        return None
    parts = package.split(".") if package else []
    up = dots - 1
    if up >= len(parts):
        return None
    return ".".join(parts[:len(parts) - up])


def _import_statements(body) -> list:
    """The module's top-level simple statements, in the order they bind names, including those of
    a version-compatibility `try: from cutlass.memory import X / except ImportError: from
    cutlass.utils import X`: the `try` side's imports, then the handlers' for names it did not
    bind (which come later here, so that the `try` side wins where both bind a name)."""
    out = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.append(stmt)
        elif isinstance(stmt, cst.Try):
            tried = [s for s in stmt.body.body if isinstance(s, cst.SimpleStatementLine)]
            bound = {_bound_name(a) for s in tried for small in s.body
                     if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar)
                     for a in small.names}
            fallback = []
            for h in stmt.handlers:
                for s in h.body.body:
                    if isinstance(s, cst.SimpleStatementLine):
                        kept = [small for small in s.body if isinstance(small, (cst.Import, cst.ImportFrom))
                                and not isinstance(small.names, cst.ImportStar)
                                and any(_bound_name(a) not in bound for a in small.names)]
                        if kept:
                            fallback.append(s.with_changes(body=kept))
            out += fallback + tried
    return out


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return alias.asname.name.value
    return _dotted(alias.name).split(".")[0]


def collect_aliases(module: cst.Module, package: Optional[str] = None) -> dict:
    """Local name -> fully qualified name for the module-level imports. Relative imports are made
    absolute from `package` (the package the module sits in); when it is unknown they keep their
    leading dots (`.utils.f`), which resolve to nothing."""
    aliases: dict = {}
    for stmt in _import_statements(module.body):
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = _dotted(alias.name)
                    if alias.asname is not None:
                        aliases[alias.asname.name.value] = full
                    else:
                        top = full.split(".")[0]
                        aliases[top] = top
            elif isinstance(small, cst.ImportFrom):
                if isinstance(small.names, cst.ImportStar):
                    continue
                mod = _dotted(small.module) if small.module is not None else ""
                dots = len(small.relative)
                if dots:
                    base = relative_base(package, dots)
                    base = base if base is not None else "." * dots
                    mod = f"{base}.{mod}" if mod and not base.endswith(".") else base + mod
                elif not mod:
                    continue
                for alias in small.names:
                    name = _dotted(alias.name)
                    local = alias.asname.name.value if alias.asname else name
                    aliases[local] = f"{mod}.{name}"
    return aliases


def _decorator_names(fn: cst.FunctionDef, aliases: dict) -> list:
    names = []
    for dec in fn.decorators:
        d = dec.decorator
        if isinstance(d, cst.Call):
            d = d.func
        q = qualify(d, aliases) or _dotted(d)
        names.append(q)
    return names


def is_kernel(fn: cst.FunctionDef, aliases: dict) -> bool:
    return any(n.endswith("cute.kernel") or n == "kernel" for n in _decorator_names(fn, aliases))


def is_jit(fn: cst.FunctionDef, aliases: dict) -> bool:
    return any(n.endswith("cute.jit") for n in _decorator_names(fn, aliases))


def parse_pins(comment: str) -> dict:
    m = PIN_RE.search(comment)
    if not m:
        return {}
    pins = {}
    for key, raw in PIN_ITEM_RE.findall(m.group(1)):
        pins[key.replace("-", "_")] = _pin_value(raw)
    return pins


def _pin_value(raw: str):
    try:
        if raw.startswith("(") or "x" in raw:
            parts = [int(p) for p in re.split(r"[x,()\s]+", raw) if p]
            if not parts:  # e.g. `cluster=x`
                return raw
            return tuple(parts) if len(parts) > 1 else parts[0]
        return int(raw, 0)
    except ValueError:
        return raw


def _kernel_pins(fn: cst.FunctionDef, module_code_lines: list, positions) -> tuple:
    """Pins from `# cutespin: k=v` comments directly above the kernel (and its decorators)."""
    pins: dict = {}
    first = positions[fn].start.line
    if fn.decorators:
        first = min(first, positions[fn.decorators[0]].start.line)
    line_no = first - 1
    pin_line = None
    while line_no >= 1:
        text = module_code_lines[line_no - 1].strip()
        if not text.startswith("#"):
            break
        got = parse_pins(text)
        if got:
            pins = {**got, **pins}
            pin_line = line_no
        line_no -= 1
    for leading in fn.leading_lines:
        if leading.comment is not None:
            pins = {**parse_pins(leading.comment.value), **pins}
    return pins, pin_line


class _LaunchFinder(cst.CSTVisitor):
    """`kernel(args).launch(...)`, or the kernel call bound to a name first and launched through it
    (cuDNN's generated hosts: `launch = kernel(...)` then `launch.launch(grid=..., cluster=...)`)."""

    def __init__(self):
        self.found: list = []
        self.bound_calls: dict = {}  # name -> the call last assigned to it

    def visit_Assign(self, node: cst.Assign):
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and isinstance(node.value, cst.Call):
            self.bound_calls[node.targets[0].target.value] = node.value

    def visit_Call(self, node: cst.Call):
        f = node.func
        if isinstance(f, cst.Attribute) and f.attr.value == "launch":
            if isinstance(f.value, cst.Call):
                self.found.append((f.value, node))
            elif isinstance(f.value, cst.Name) and f.value.value in self.bound_calls:
                self.found.append((self.bound_calls[f.value.value], node))


def _callee_name(call: cst.Call) -> str:
    f = call.func
    if isinstance(f, cst.Attribute):
        return f.attr.value
    if isinstance(f, cst.Name):
        return f.value
    return ""


def discover(text: str, package: Optional[str] = None) -> ModuleInfo:
    """`package`: the dotted package the file sits in ("" for a top-level module), which makes its
    relative imports absolute; None when unknown."""
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    aliases = collect_aliases(module, package)
    info = ModuleInfo(wrapper, module, positions, aliases, {}, {}, {})
    lines = text.splitlines()

    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    t = small.targets[0].target
                    if isinstance(t, cst.Name):
                        info.constants[t.value] = small.value
                    elif isinstance(t, (cst.Tuple, cst.List)) and isinstance(small.value, (cst.Tuple, cst.List)) \
                            and len(t.elements) == len(small.value.elements) \
                            and not any(isinstance(e, cst.StarredElement) for e in t.elements + small.value.elements):
                        # `KV_STAGES, S_STAGES = 3, 2`: each name its element.
                        for target, value in zip(t.elements, small.value.elements):
                            if isinstance(target.value, cst.Name):
                                info.constants[target.value.value] = value.value
                    elif isinstance(t, (cst.Tuple, cst.List)) and \
                            not any(isinstance(e, cst.StarredElement) for e in t.elements):
                        # `CFG, _TMA = make_cfg(PARAMS)` (cuDNN frost): each name an item of the value.
                        for i, target in enumerate(t.elements):
                            if isinstance(target.value, cst.Name):
                                info.constants[target.value.value] = UnpackedItem(small.value, i)
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value:
                    info.constants[small.target.value] = small.value
        elif isinstance(stmt, cst.FunctionDef):
            info.functions[stmt.name.value] = stmt
            if is_kernel(stmt, aliases):
                pins, pin_line = _kernel_pins(stmt, lines, positions)
                info.kernels.append(KernelSite(stmt.name.value, stmt.name.value, stmt, None, pins, pin_line))
        elif isinstance(stmt, cst.ClassDef):
            info.classes[stmt.name.value] = stmt
            for item in stmt.body.body:
                if isinstance(item, cst.FunctionDef) and is_kernel(item, aliases):
                    pins, pin_line = _kernel_pins(item, lines, positions)
                    qn = f"{stmt.name.value}.{item.name.value}"
                    info.kernels.append(KernelSite(item.name.value, qn, item, stmt, pins, pin_line))

    # Launch sites: `<kernel>(args).launch(...)` in any function of the same class / module.
    for site in info.kernels:
        hosts = []
        if site.cls is not None:
            hosts = [i for c in _local_lineage(site.cls, info.classes) for i in c.body.body
                     if isinstance(i, cst.FunctionDef)]
        hosts += list(info.functions.values())
        for host in hosts:
            finder = _LaunchFinder()
            host.visit(finder)
            for kcall, launch in finder.found:
                if _callee_name(kcall) == site.name:
                    info.launches[site.qualname] = LaunchSite(host, kcall, launch)
                    break
            if site.qualname in info.launches:
                break
    return info


def _local_lineage(cls: cst.ClassDef, classes: dict) -> list:
    """The class and its base classes defined in the same file (a kernel class that inherits its
    host `__call__` from a local base launches through it)."""
    out, todo = [], [cls]
    while todo and len(out) < 16:
        c = todo.pop(0)
        if c in out:
            continue
        out.append(c)
        todo += [classes[b.value.value] for b in c.bases
                 if isinstance(b.value, cst.Name) and b.value.value in classes]
    return out


def class_methods(cls: Optional[cst.ClassDef]) -> dict:
    if cls is None:
        return {}
    # A later definition of a name replaces an earlier one, as in Python, except a property's
    # setter or deleter, which leaves the getter what reading the attribute runs.
    return {i.name.value: i for i in cls.body.body if isinstance(i, cst.FunctionDef) and not is_property_accessor(i)}


def is_property_accessor(fn: cst.FunctionDef) -> bool:
    """`@x.setter` / `@x.deleter`: a second definition of a property's name that is not what
    reading the attribute runs (cuDNN's MoE scheduler defines `scenario` as a property and a
    setter; the setter, defined last, made `self.scenario` a bound method)."""
    for d in fn.decorators:
        dec = d.decorator
        if isinstance(dec, cst.Attribute) and dec.attr.value in ("setter", "deleter"):
            return True
    return False


def self_assignments(cls: Optional[cst.ClassDef]) -> list:
    """Every `self.x = expr` in the class's methods, in source order (method order, then body);
    given a statement instead of a class, those in the statement."""
    if cls is None:
        return []
    return list(_self_assignments(cls))


@functools.lru_cache(maxsize=8192)
def _self_assignments(cls: cst.CSTNode) -> tuple:
    # Cached by node (libcst nodes hash by identity and never change): host code asks again for
    # every statement of every method it runs, once per configuration.
    out: list = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign):
            for t in node.targets:
                tgt = t.target
                if isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and tgt.value.value == "self":
                    out.append((tgt.attr.value, node.value))
                elif isinstance(tgt, cst.Tuple):
                    # `self.a, self.b = f(...)` unpacks a call: each attribute gets part of its value.
                    vals = [v.value for v in node.value.elements] if isinstance(node.value, cst.Tuple) \
                        else [node.value] * len(tgt.elements)
                    for el, val in zip(tgt.elements, vals):
                        e = el.value
                        if isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self":
                            out.append((e.attr.value, val))

        def visit_AnnAssign(self, node: cst.AnnAssign):
            tgt = node.target
            if node.value is not None and isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and tgt.value.value == "self":
                out.append((tgt.attr.value, node.value))

    if not isinstance(cls, cst.ClassDef):
        cls.visit(V())  # one statement or function (host code run statement by statement)
        return tuple(out)
    for item in cls.body.body:
        if isinstance(item, cst.FunctionDef):
            item.visit(V())
    return tuple(out)
