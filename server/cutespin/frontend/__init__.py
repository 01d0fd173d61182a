"""Front end: source text -> one `ir.KernelModel` per `@cute.kernel` function.

Static only: libcst parses the file; nothing is imported or executed.
"""
from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field, fields, replace
from typing import Callable, Optional

import libcst as cst
import libcst.matchers as cst_matchers

from .. import ir
from ..config import Settings
from . import interp as I
from .primitives import TMEM_RAW
from .discover import KernelSite, ModuleInfo, class_methods, discover, self_assignments
from .project import Project
from .values import (FULL_MASK, TMEM_ALL_STAGES, TMEM_UNKNOWN_OFFSET, CtaGroupOp, FuncRef, Gmem, ModuleRef, Record,
                     SelfObj, Smem, TmaAtom, TmaInfo, Unknown)

DEFAULT_LOOP_BOUND = 3
# Trips of each runtime loop in the discovery run, which finds the loops (and the uniform
# conditions) the configurations vary: one trip reaches every loop but those only a later trip of
# an enclosing loop reaches, which every configuration then runs at the bound (stated). The
# configurations themselves take every count up to the bound.
DISCOVERY_TRIPS = 1
# The default bound 2 x stages + 1 is capped here: the model of a runtime loop holds one copy of
# the loop per trip count (quadratic in the bound), so a 64-stage ring's 129 trips only ever gave
# "model too large", after a minute of unrolling; at 33 it is checked (within that bound).
MAX_DEFAULT_LOOP_BOUND = 33


class FrontendError(Exception):
    """The file cannot be analyzed at all (e.g. a syntax error)."""


@dataclass
class KernelEnv:
    """What the kernel's body starts from: `self`, parameters, launch shape, pins."""

    self_obj: Optional[SelfObj]
    params: dict
    threads: Optional[int]
    cluster: int
    grid: Optional[int]
    stages: Optional[int]
    loop_bound: Optional[int]
    assumptions: list
    # `block=[self.n_warps * 32, 1, 1]` with `self.n_warps` not folded: (attribute, factor), so
    # that the attribute can be tied to the block size the model takes (build_kernel).
    block_tie: Optional[tuple] = None
    # `block=(self.threads, 1, 1)` with `self.threads = 32 * (q_tile // 16 + 1)` from a constructor
    # argument that does not fold: (argument, the block's term), so that the argument can be
    # solved from the block size the model takes and the constructor folded with it.
    block_argument: Optional[tuple] = None
    # The launch's block as (x, y, z) when every extent folds; None when it is one-dimensional
    # or does not fold (then `block_shape_unknown` says whether y or z may exceed 1).
    block_dims: Optional[tuple] = None
    block_shape_unknown: bool = False
    # Uniform conditions the modeled launch decides: `self.cluster_shape_mn = (2, 1) if
    # self.NUM_CTAS == 2 else (1, 1)` given the modeled 1-CTA cluster has `NUM_CTAS == 2` False
    # (condition term -> value; `pinned_select_facts`).
    host_facts: dict = field(default_factory=dict)
    # The host's `if`s on uniform conditions: (cta, condition term) -> (line, text, negated).
    host_sites: dict = field(default_factory=dict)


# Larger files are refused: libcst needs about 25 s and 0.5 GB per 500 KB of Python, far more than
# any kernel file (the largest CuTe DSL examples are near 150 KB).
MAX_SOURCE_CHARS = 512 * 1024


def build_models(text: str, path: str, settings: Settings, only: Optional[str] = None) -> list:
    """One model per `@cute.kernel` of the file (or only the kernel named `only`)."""
    python_error = check_shape(text)
    project = Project.for_file(path, settings.extra_paths)
    try:
        info = discover(text, project.package if project is not None else None)
    except cst.ParserSyntaxError as e:
        line = e.raw_line
        if e.message.startswith("tokenizer error") and python_error is not None and python_error.lineno:
            line = python_error.lineno  # libcst's tokenizer errors all say line 1
        raise FrontendError(f"syntax error at line {line}: {e.message}") from None
    except Exception as e:  # noqa: BLE001 - re-raised unless the nesting exhausted Python's stack
        if not _from_recursion(e):
            raise
        raise FrontendError("the code nests too deeply to analyze") from None
    if project is not None:
        info.project = project
        info.name = project.module_name
    return [build_kernel_compacting(info, site, path, settings) for site in info.kernels
            if only is None or site.qualname == only]


def build_kernel_compacting(info: ModuleInfo, site: KernelSite, path: str, settings: Settings) -> ir.KernelModel:
    """`build_kernel`, tried again past the interpretation budget with the loops that only compute
    checked as one trip each (cuDNN's attention kernels unroll register math: exp2 over every
    pair of a 128-wide row, masks over every column). That try is kept when it fits the budget:
    what such loops compute is then unknown, which an honest model states and may leave other
    constructs unmodeled, so kernels that fit are never built that way. A kernel with another
    unmodeled construct before the budget ran out is not tried again: it could not become fully
    modeled, and the second try can take as long as the first; unless the budget ran out before the
    uniform conditions found were checked as configurations of their own (`splits_left`, also
    when the runs before those fitted), which decide what the first runs left unknown (a routine
    chosen on a build option, cuDNN's DSA). The second try is kept when it fitted the budget."""
    model = build_kernel(info, site, path, settings)
    if not model.splits_left and (not any(_over_budget(u) for u in model.unmodeled)
                                  or not all(_over_budget(u) for u in model.unmodeled)):
        return model
    compact = build_kernel(info, site, path, settings, compact=True)
    if any(_over_budget(u) for u in compact.unmodeled):
        return model
    # A first try that fitted the budget (only its configurations' runs did not) is kept unless
    # the compact one left fewer constructs unmodeled: it is the more precise model.
    first_fitted = not any(_over_budget(u) for u in model.unmodeled)
    return model if first_fitted and len(compact.unmodeled) >= len(model.unmodeled) else compact


def _over_budget(u: ir.Unmodeled) -> bool:
    return u.construct == "kernel body" and "interpretation steps" in u.why


def _not_compiled_text(e: BaseException) -> str:
    """Why a warp's trace ended the kernel body: a `raise` (no kernel compiles) or a `trap` on
    every path (every launch aborts)."""
    if isinstance(e, I._Traps):
        return f"{e} on every path: the kernel always aborts, nothing else runs to check"
    return f"{e}: the DSL trace fails there, so the kernel does not compile as written"


def _from_recursion(e: BaseException) -> bool:
    """A RecursionError, or an error raised while one unwound (libcst's metadata visitors turn it
    into a KeyError on the way out)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, RecursionError):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def check_shape(text: str) -> Optional[SyntaxError]:
    """Refuse, with a FrontendError, what libcst cannot take safely: a file beyond
    MAX_SOURCE_CHARS, text that is not Unicode (lone surrogates, which an editor can send), and
    code nested deeper than CPython's own parser accepts (libcst's native parser overflows the C
    stack and kills the process on a few thousand nested brackets or operators). CPython's parser
    checks the nesting without executing anything; its other syntax errors are left to libcst,
    which reports them (the error is returned for its line)."""
    if len(text) > MAX_SOURCE_CHARS:
        raise FrontendError(f"the file is too large to analyze ({len(text) // 1024} KB; the limit is "
                            f"{MAX_SOURCE_CHARS // 1024} KB)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise FrontendError(f"syntax error at line {text.count(chr(10), 0, e.start) + 1}: the text is not valid "
                            f"Unicode (a lone surrogate)") from None
    try:
        ast.parse(text)
    except SyntaxError as e:
        msg = str(e.msg)
        if "too many nested" in msg or "too complex" in msg or "too many statically nested" in msg:
            raise FrontendError(f"syntax error at line {e.lineno}: {msg}: the code nests too deeply to analyze") \
                from None
        if not e.lineno and "\x00" in text:  # Python 3.11.4+: a SyntaxError without a line
            e.lineno = text.count("\n", 0, text.index("\x00")) + 1
        return e
    except (RecursionError, MemoryError):
        raise FrontendError("the code nests too deeply to analyze (Python's own parser gives up)") from None
    except ValueError:  # NUL bytes (Python < 3.12): libcst reports them, here is their line
        if "\x00" in text:
            err = SyntaxError("NUL byte")
            err.lineno = text.count("\n", 0, text.index("\x00")) + 1
            return err
    return None


def _quiet_interp(info, self_obj, methods, env=None, cta=0, warp=0, cluster=1, stage_default=None, sites=None,
                  environment_reads=None):
    """An interpreter for host code. `sites`, when given, collects the `if`s it meets on uniform
    conditions (`Registry.branch_sites`), so that a kernel configuration fixing a condition the
    host branched on (`self.TileScheduler = A if c else B`) is labelled by that `if`.
    `environment_reads`, when given, collects the environment variables it read as unset, which
    the kernel's verdict states (its own assumptions are thrown away with it)."""
    ctx = I.WarpContext(cta=cta, warp=warp, cluster=cluster, ctas=1, threads=32, trips={}, trip_bound=1,
                        discovered={})
    it = I.KernelInterp(info, ctx, self_obj, methods, env or {}, I.Registry(None))
    if sites is not None:
        it.registry.branch_sites = sites
    if environment_reads is not None:
        it.registry.environment_reads = environment_reads
    it.host_stage_default = stage_default
    it.host = True
    return it


def _exec_host_statements(it, body) -> None:
    """Host code statement by statement. A statement the interpreter cannot follow (cudnn's tile
    validation loop, whose helper returns under a condition inside a loop and raises after it)
    leaves what it assigns unknown, and the method goes on, so the constructor's later
    attributes (`self.threads = 384`) still fold."""
    for stmt in (body.body if isinstance(body, cst.IndentedBlock) else body):
        try:
            it.exec_stmt(stmt)
        except (I.Unsupported, RecursionError):
            if it.self_obj is not None:
                for attr, _ in self_assignments(stmt):
                    it.self_obj.attrs[attr] = Unknown(f"self.{attr}")
            for name in _local_targets(stmt):
                it.env[name] = Unknown(f"host value {name}")


def _local_targets(stmt) -> set:
    """Local names a statement binds (assignments, loop variables), at any depth."""
    names: set = set()

    def add(t):
        if isinstance(t, cst.Name):
            names.add(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for e in t.elements:
                add(e.value)

    class V(cst.CSTVisitor):
        def visit_Assign(self, node):
            for t in node.targets:
                add(t.target)

        def visit_AugAssign(self, node):
            add(node.target)

        def visit_AnnAssign(self, node):
            add(node.target)

        def visit_For(self, node):
            add(node.target)

        def visit_FunctionDef(self, node):
            return False

    stmt.visit(V())
    return names


def _host_eval(it, expr):
    """A launch expression evaluated in the host code's environment: what the interpreter cannot
    follow there (a property whose loop returns under a runtime condition) is unknown, as in the
    host body itself."""
    try:
        return it.eval(expr)
    except (I.Unsupported, I._Return, RecursionError):
        return Unknown("launch argument")


def _host_stage_default(pins: dict) -> int:
    """The stage count host code gives an unfoldable stage-count attribute: the `stages` pin, or
    the default."""
    pinned = pins.get("stages")
    return pinned if isinstance(pinned, int) and not isinstance(pinned, bool) and pinned > 0 else DEFAULT_STAGES


def _launch_cluster_from_attributes(info: ModuleInfo, site: KernelSite) -> bool:
    """The launch's cluster is built from a cluster shape attribute (`cluster=(*self.cluster_shape_mn,
    1)`), or the launch is not found: then the attribute is the cluster the kernel runs in."""
    launch = info.launches.get(site.qualname)
    if launch is None:
        return True
    arg = next((a for a in launch.launch.args if a.keyword is not None and a.keyword.value == "cluster"), None)
    return arg is None or any(name in info.code(arg.value) for name in CLUSTER_SHAPE_NAMES)


def _cluster_sides(info: ModuleInfo, fn: cst.FunctionDef, pins: dict, assumptions: list) -> dict:
    """Host `if` statements of `fn` both of whose sides set a cluster shape attribute to a literal
    (`if self.topk % 256 == 1: self.cluster_shape_mn = (2, 1); self.use_2cta_instrs = True
    else: self.cluster_shape_mn = (1, 1); self.use_2cta_instrs = False`), exactly one of them to
    the modeled cluster: that side is taken, so the attributes set with the shape (the 2-CTA
    flag, `atom_thr_size`) agree with the cluster the kernel is checked in. Stated."""
    sides: dict = {}

    def literal_shape(body, name):
        for stmt in body.body if isinstance(body, cst.IndentedBlock) else []:
            for small in getattr(stmt, "body", []) if isinstance(stmt, cst.SimpleStatementLine) else []:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    t = small.targets[0].target
                    if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" \
                            and t.attr.value == name and isinstance(small.value, cst.Tuple):
                        vals = [e.value for e in small.value.elements]
                        if all(isinstance(v, cst.Integer) for v in vals):
                            return tuple(int(v.value) for v in vals)
        return None

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is fn  # not into nested functions

        def visit_If(self, node: cst.If):
            if not isinstance(node.orelse, cst.Else):
                return
            for name in CLUSTER_SHAPE_NAMES:
                shapes = [literal_shape(node.body, name), literal_shape(node.orelse.body, name)]
                if None in shapes:
                    continue
                modeled = _cluster_shape(name, pins)
                hits = [k for k, sh in enumerate(shapes) if sh[:len(modeled)] == modeled]
                if len(hits) == 1:
                    sides[node] = hits[0] == 0
                    assumptions.append(f"the host condition `{info.code(node.test)}` (line "
                                       f"{info.span(node.test).line}) is taken as {hits[0] == 0}: that side "
                                       f"sets self.{name} = {shapes[hits[0]]}, the modeled cluster, and the "
                                       f"attributes that go with it")
                    return

    fn.visit(V())
    return sides


def _fold_self(info: ModuleInfo, site: KernelSite, methods: dict, pins: dict,
               defaulted: Optional[set] = None, forced: Optional[list] = None, sites: Optional[dict] = None,
               environment_reads: Optional[list] = None) -> SelfObj:
    """`self.*` attributes as the class's methods set them (`__init__` first), interpreted with
    their control flow: an attribute set differently on two branches becomes unknown. A value
    folded by one method is kept when a later method re-assigns it from something unknown. A
    host `if` that sets the cluster shape on both sides runs on the modeled cluster's side
    (`_cluster_sides`; its assumptions go to `forced`)."""
    self_obj = SelfObj({})
    # Class-level constants (`THREADS_PER_CTA = 384`) are what `self.X` reads when no method
    # assigns X; a method's assignment overrides them as it would at run time.
    from_class = _class_constants(info, site.cls, methods)
    self_obj.attrs.update(from_class)
    assigned = {attr for attr, _ in self_assignments(site.cls)}
    # Methods inherited from base classes (of this file or of sibling modules) set attributes too.
    inherited = I.inherited_methods(info, info.project, methods)
    for owner, _ in inherited.values():
        assigned |= {attr for attr, _ in self_assignments(owner.node)}
    own = {name: (None, fn) for name, fn in methods.items()}
    every = {**{n: (I._module_of(o, info), fn) for n, (o, fn) in inherited.items()}, **own}
    order = ["__init__"] + [m for m in every if m != "__init__"]
    versions: dict = {}  # attribute -> unknown values the constructor named (KernelInterp.host_attribute)
    for name in order:
        module, fn = every.get(name, (None, None))
        if fn is None or fn is site.node:
            continue
        before = dict(self_obj.attrs)
        it = _quiet_interp(info, self_obj, methods, stage_default=_host_stage_default(pins), sites=sites,
                           environment_reads=environment_reads)
        it.no_inline.add(site.node)
        if name == "__init__":
            it.host_attribute_versions = versions
        if module is None and forced is not None and _launch_cluster_from_attributes(info, site):
            it.forced_sides = _cluster_sides(info, fn, pins, forced)
        for p in fn.params.params:
            n = p.name.value
            if n != "self":
                hit, pv = _pin_matches(n, pins, defaulted)
                # A constructor argument is one value for the whole launch (P14): a uniform term, so
                # that `self.slots = 2 if layernorm else 1` stays a select on it.
                it.env[n] = pv if hit else Unknown(f"host argument {n}", key=I._leaf("host", n) if name == "__init__"
                                                   else None)
        try:
            it.in_module(module, lambda f=fn: _exec_host_statements(it, f.body))
        except (I.Unsupported, I._Return, RecursionError):
            pass
        if name == "__init__":
            _key_host_attributes(self_obj)
        for attr, val in before.items():
            if attr in from_class and val is from_class[attr]:
                continue  # a class default the method re-assigned: the method's value stands
            if isinstance(self_obj.attrs.get(attr), Unknown) and not isinstance(val, Unknown):
                self_obj.attrs[attr] = val
    for attr in assigned:
        self_obj.attrs.setdefault(attr, Unknown(f"self.{attr}"))
    # An attribute only host code assigns (setup methods the launcher calls, never reached from
    # the kernel) is a host value: the same in every thread, like the constructor's (P14).
    device = {site.node} | {every[n][1] for n in _methods_reached_from(site.node, every)}
    device_assigned = {attr for fn in device for attr, _ in self_assignments(fn)}
    for attr, val in self_obj.attrs.items():
        if isinstance(val, Unknown) and val.key is None and attr not in device_assigned:
            # A setup method's new value of an attribute the constructor already named is
            # another value: a name of its own, so what was derived from the first stays apart.
            n = versions.get(attr, 0) + 1
            self_obj.attrs[attr] = Unknown(val.why, key=I._leaf("self", attr if n == 1 else f"{attr}#{n}"))
    # Stage counts a base class in another module sets (`self.num_stages`): unknown here, so that
    # the `stages` pin or the default stage count applies to them like to the class's own.
    # A method is no stage count, whatever its name (cuDNN's `self.consumer_split_qstage(...)`
    # read as an attribute of 2 stages).
    for attr in _self_attribute_reads(site.cls):
        if _is_stage_count_name(attr) and attr not in every:
            self_obj.attrs.setdefault(attr, Unknown(f"self.{attr} (set outside this class)"))
    return self_obj


def _class_body_assignments(node: cst.ClassDef) -> list:
    """(name, value expression) of the class body's plain `X = v` / `X: T = v` statements, in order."""
    out = []
    for stmt in node.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                out.append((small.target.value, small.value))
            elif isinstance(small, cst.Assign) and len(small.targets) == 1 \
                    and isinstance(small.targets[0].target, cst.Name):
                out.append((small.targets[0].target.value, small.value))
    return out


def _class_constants(info: ModuleInfo, cls: cst.ClassDef, methods: dict) -> dict:
    """The folded class-level constants of the kernel's class and its package bases (a subclass's
    own value wins), each evaluated in its class's module with the names its class body defined
    before it in scope, as Python's class body does. Values that do not fold are left out: the
    interpreter reads those as uniform unknowns (P14)."""
    name = next((n for n, node in info.classes.items() if node is cls), None)
    chain = []  # (module or None, ClassDef), most basic first
    if name is not None and info.project is not None:
        cref = info.project.class_ref(info, name)
        stack, seen = [cref], []
        while stack:
            c = stack.pop(0)
            if c.qualname in {s.qualname for s in seen}:
                continue
            seen.append(c)
            stack = list(c.bases) + stack
        chain = [(I._module_of(c, info), c.node) for c in reversed(seen)]
    else:  # one file: its own classes are the bases that can be followed
        node, chain = cls, []
        while node is not None and all(node is not c for _, c in chain):
            chain.insert(0, (None, node))
            first = node.bases[0].value if node.bases else None
            node = info.classes.get(first.value) if isinstance(first, cst.Name) else None
    out: dict = {}
    for module, node in chain:
        scope: dict = {}
        for attr, expr in _class_body_assignments(node):
            it = _quiet_interp(info, SelfObj({}), methods, env=dict(scope))
            try:
                value = it.in_module(module, lambda e=expr: it.eval(e))
            except Exception:  # noqa: BLE001 - a class body the interpreter cannot follow folds nothing
                value = Unknown(f"class attribute {attr}")
            scope[attr] = value
            if _is_class_constant(value):
                out[attr] = value
            else:
                out.pop(attr, None)
    return out


def _is_class_constant(v) -> bool:
    """Plain data (numbers, strings, None, DSL types, tuples of them): not functions the class
    body defines, not unknowns."""
    if isinstance(v, (tuple, list)):
        return all(_is_class_constant(x) for x in v)
    return not isinstance(v, (Unknown, I.FuncRef, I.LambdaRef, I.PartialRef))


def _methods_reached_from(fn, methods: dict) -> set:
    """Names of the methods `fn` uses through `self.name`, transitively (the kernel's device
    helpers; a method passed as a callback counts too)."""
    seen: set = set()
    todo = [fn]
    while todo:
        names: set = set()

        class V(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute):
                if isinstance(node.value, cst.Name) and node.value.value == "self":
                    names.add(node.attr.value)

        todo.pop().visit(V())
        for n in names:
            if n in methods and n not in seen:
                seen.add(n)
                todo.append(methods[n][1])
    return seen


def _key_host_attributes(self_obj: SelfObj):
    """Attributes the constructor leaves unknown are host values, the same for every thread:
    they become CTA-uniform leaves (P14). Later methods may be device code, so what they assign
    keeps whatever uniformity its own value has."""
    for attr, val in self_obj.attrs.items():
        if isinstance(val, Unknown) and val.key is None:
            self_obj.attrs[attr] = Unknown(val.why, key=I._leaf("self", attr))


def _uniform_argument(name: str, v):
    """A kernel argument the front end cannot fold is the same for every thread of the launch:
    a CTA-uniform leaf (P14). One the launcher computes from the host configuration alone
    (`NUM_CTAS=self.NUM_CTAS`) keeps that value's term: the kernel's own `self.NUM_CTAS`, and
    what the constructor derived from it (`self.bars = 2 if self.NUM_CTAS == 2 else 0`), are the
    same value, and a configuration that fixes one fixes the other."""
    if isinstance(v, CtaGroupOp):
        return replace(v, key=I._leaf("arg", name))  # keeps its CTA group (`tiled_mma.thr_id`)
    if _host_configuration(v):
        return v
    return Unknown(v.why, key=I._leaf("arg", name)) if isinstance(v, Unknown) else v


def _host_configuration(v) -> bool:
    return type(v) is Unknown and v.key is not None and I.host_term(v.key)


def _self_attribute_reads(cls) -> set:
    """Names of the `self.X` attributes a class body reads or writes."""
    names: set = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute):
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                names.add(node.attr.value)

    if cls is not None:
        cls.visit(V())
    return names


SHAPE_PINS = ("stages", "loop", "block", "cluster", "grid")


def _positive_pin(key: str, v) -> bool:
    """Shape pins are positive integers; block, cluster and grid may be tuples of them."""
    ok = lambda x: isinstance(x, int) and not isinstance(x, bool) and x > 0  # noqa: E731
    if isinstance(v, tuple) and key in ("block", "cluster", "grid"):
        return bool(v) and all(ok(x) for x in v)
    return ok(v)


CLUSTER_SHAPE_NAMES = {"cluster_shape_mn": 2, "cluster_shape_mnk": 3}
# Scalar cluster extents (`self.cluster_n = min(config.cluster_n, max_cluster)`): the CTAs of
# the cluster the kernel is modeled with, 1 without a `cluster` pin.
CLUSTER_SIZE_NAMES = {"cluster_n", "cluster_m", "cluster_size", "num_ctas_in_cluster"}


def _cluster_extent(pins: dict) -> int:
    dims = _cluster_pin_dims(pins)
    return _first_dim_product(dims) if dims else 1


def _default_cluster_extents(self_obj, pins: dict, defaulted: set) -> None:
    """Unknown scalar cluster extents of `self` (set by the host code) take the modeled cluster."""
    if self_obj is None:
        return
    for attr, val in list(self_obj.attrs.items()):
        if attr in CLUSTER_SIZE_NAMES and isinstance(val, Unknown):
            self_obj.attrs[attr] = _cluster_extent(pins)
            defaulted.add(f"self.{attr}")


def _cluster_shape(name: str, pins: dict):
    """A host argument `cluster_shape_mn(k)` as the `cluster` pin gives it; without the pin, all
    ones: the 1-CTA cluster the front end assumes when the launch's cluster does not fold, so that
    the layout algebra built on it (multicast CTA counts, arrival counts) folds consistently."""
    arity = CLUSTER_SHAPE_NAMES[name]
    dims = _cluster_pin_dims(pins)
    return tuple(dims[:arity]) + (1,) * max(0, arity - len(dims))


def _cluster_pin_dims(pins: dict) -> tuple:
    pin = pins.get("cluster")
    return pin if isinstance(pin, tuple) else (pin,) if isinstance(pin, int) else ()


def _pin_matches(name: str, pins: dict, defaulted: Optional[set] = None):
    if name in pins:
        return True, pins[name]
    if "stages" in pins and "stage" in name.lower():
        return True, pins["stages"]
    if name in CLUSTER_SHAPE_NAMES:
        if "cluster" not in pins and defaulted is not None:
            defaulted.add(name)
        return True, _cluster_shape(name, pins)
    return False, None


def _annotation_text(param: cst.Param, info: ModuleInfo) -> str:
    return info.code(param.annotation.annotation) if param.annotation else ""


def _optional_annotation(ann: str) -> bool:
    """`Optional[cute.Tensor]`, `cute.Tensor | None`: the caller may pass None."""
    return bool(re.search(r"\bOptional\[|\bNone\b", ann))


def _param_default(param: cst.Param, ann: str, name: str):
    if "Tensor" in ann or ann.endswith("Pointer"):
        return Gmem(name, optional=_optional_annotation(ann))
    if "CopyAtom" in ann or "tma" in name.lower() and "atom" in name.lower():
        return TmaAtom(name) if "tma" in name.lower() else Unknown(f"copy atom {name}")
    if ann.endswith("TmaInfo"):
        # `tma_k: cpasync.TmaInfo`, built on the host by make_tiled_tma_atom_A/B: its atom is a
        # TMA atom, and its `smem_layout` a host configuration value (KernelInterp.eval_Attribute).
        return TmaInfo((TmaAtom(name), Unknown("TMA tensor")))
    return Unknown(f"host argument {name}")


def _configuration_builder(info: ModuleInfo, read: set) -> Optional[tuple]:
    """The module's one function annotated to return a class of its own (cuDNN frost's
    `build_cfg(...) -> Mamba2BpropSummaryCfg`) that declares every attribute in `read`, as
    (name, FunctionDef), else None."""
    found = [(name, fn) for name, fn in info.functions.items()
             if fn.returns is not None and isinstance(fn.returns.annotation, cst.Name)
             and fn.returns.annotation.value in info.classes
             and read <= _declared_fields(info.classes[fn.returns.annotation.value])]
    return found[0] if len(found) == 1 else None


def _declared_fields(cls: cst.ClassDef) -> set:
    """The names a class body declares (`d_k: int`, `b_t: int = CFG.B_T`)."""
    names = set()
    for stmt in cls.body.body:
        for small in getattr(stmt, "body", ()):
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                names.add(small.target.value)
            elif isinstance(small, cst.Assign):
                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names


def _attributes_read(node: cst.CSTNode, name: str) -> set:
    """The attributes `name.attr` that code reads or sets."""
    return {a.attr.value for a in cst_matchers.findall(node, cst_matchers.Attribute(value=cst_matchers.Name(name)))}


def _built_configuration(it, info: ModuleInfo, host: cst.FunctionDef, param: cst.Param, assumptions: list):
    """A launcher's `cfg: cutlass.Constexpr` argument, built by the caller (outside the package's
    kernels, so not seen) with the module's configuration builder: that builder's result with its
    arguments unknown, so that what it fixes (warp roles, stage counts, the block it derives) folds.
    None where no single builder returns a class declaring every attribute the launcher uses, or
    the result is no object of that class."""
    if "Constexpr" not in _annotation_text(param, info) or "[" in _annotation_text(param, info):
        return None
    read = _attributes_read(host.body, param.name.value)
    builder = _configuration_builder(info, read) if read else None
    if builder is None:
        return None
    name, fn = builder
    kwargs = {p.name.value: Unknown(f"host argument {p.name.value}", key=I._leaf("host", f"{name}.{p.name.value}"))
              for p in [*fn.params.params, *fn.params.kwonly_params] if p.default is None}
    try:
        built = it.inline(FuncRef(name, fn), [], kwargs, param)
    except (I.Unsupported, I.NotCompiled, RecursionError):
        return None
    if not (isinstance(built, Record) and built.cls is not None
            and built.cls.qualname.split(".")[-1] == fn.returns.annotation.value):
        return None
    assumptions.append(f"`{param.name.value}` (a compile-time argument the caller passes) is what the module's "
                       f"`{name}(...)` builds, with arguments that are not known")
    return built


def _keep_host_terms(self_obj: Optional[SelfObj], folded: dict) -> None:
    """The launcher re-runs setup methods (`self._setup_attributes()`): an attribute it leaves
    unknown without a term keeps the host value's term `_fold_self` gave it, so that `subtile ==
    self.iter_release` stays a uniform condition (P14). Only the term: a number `_fold_self`
    folded is not put back, as the launcher may have derived other attributes (a buffer's
    stages) from the value it recomputed."""
    if self_obj is None:
        return
    for attr, val in list(self_obj.attrs.items()):
        prev = folded.get(attr)
        if isinstance(val, Unknown) and val.key is None and isinstance(prev, Unknown) and prev.key is not None:
            self_obj.attrs[attr] = Unknown(val.why, key=prev.key)


def _one_cta_tiled_mmas(site: KernelSite, info: ModuleInfo, params: dict, assumptions: list) -> None:
    """A `cute.TiledMma` argument whose CTA group did not fold (`self.cta_group`, chosen on the host
    from the tile shape) is a 1-CTA MMA in a modeled 1-CTA cluster: a cta_group::2 MMA needs a
    pair of CTAs. So `tiled_mma.thr_id` has size 1 and `bidx % size(thr_id) == 0` (the pair
    leader test) holds."""
    for p in site.node.params.params:
        n = p.name.value
        v = params.get(n)
        if "TiledMma" in _annotation_text(p, info) and isinstance(v, Unknown) and not isinstance(v, CtaGroupOp):
            params[n] = _uniform_argument(n, CtaGroupOp("tiled MMA", ctas=1))
            assumptions.append(f"the CTA group of {n} is not known: a 1-CTA MMA, as the modeled cluster has one CTA")


def kernel_env(info: ModuleInfo, site: KernelSite, settings: Settings) -> KernelEnv:
    methods = class_methods(site.cls)
    pins = {**settings.kernel_pins.get(site.qualname, {}), **site.pins}
    ignored = [(k, pins.pop(k)) for k in SHAPE_PINS if k in pins and not _positive_pin(k, pins[k])]
    defaulted: set = set()  # cluster-shape host arguments given the assumed 1-CTA shape
    forced: list = []  # host branches taken for the modeled cluster (`_cluster_sides`)
    host_sites: dict = {}  # (cta, uniform condition) -> its host `if` (Registry.branch_sites)
    environment_reads: list = []  # environment variables host code read as unset (h_environ_get)
    self_obj = _fold_self(info, site, methods, pins, defaulted, forced, host_sites, environment_reads) \
        if site.cls is not None else None
    assumptions: list = [f"pin `{k}={v}` ignored: expected a positive integer" for k, v in ignored]
    assumptions += list(dict.fromkeys(forced))
    host_facts: dict = {}
    if self_obj is not None:
        for attr, val in list(self_obj.attrs.items()):
            hit, pv = _pin_matches(attr, pins)
            if hit and (isinstance(val, Unknown) or attr in pins):
                self_obj.attrs[attr] = pv
                assumptions.append(f"self.{attr} = {pv} (pinned)")
                decided = pinned_select_facts(val, pv)
                if decided:
                    host_facts.update(decided)
                    assumptions.append(f"self.{attr} is chosen by a condition on the host configuration: the "
                                       f"kernel is checked where that condition gives {pv}")

    # Host side: run the launching function quietly to learn the launch shape and arguments.
    launch = info.launches.get(site.qualname)
    host_env: dict = {}
    kernel_args: dict = {}
    block_tie = block_argument = block_dims = None
    block_shape_unknown = False
    threads = cluster = grid = None
    if launch is not None:
        host = launch.host
        it = _quiet_interp(info, self_obj, methods, stage_default=_host_stage_default(pins), sites=host_sites,
                           environment_reads=environment_reads)
        it.no_inline.add(site.node)
        for p in host.params.params:
            n = p.name.value
            if n == "self":
                continue
            hit, pv = _pin_matches(n, pins, defaulted)
            it.env[n] = pv if hit else _param_default(p, _annotation_text(p, info), n)
            built = None if hit else _built_configuration(it, info, host, p, assumptions)
            if built is not None:
                it.env[n] = built
        folded = dict(self_obj.attrs) if self_obj is not None else {}
        try:
            _exec_host_statements(it, host.body)
        except (I.Unsupported, I._Return, RecursionError):
            pass
        _keep_host_terms(self_obj, folded)
        _default_cluster_extents(self_obj, pins, defaulted)
        host_env = it.env
        kw = {a.keyword.value: a.value for a in launch.launch.args if a.keyword is not None}
        threads = _first_dim_product(_host_eval(it, kw["block"])) if "block" in kw else None
        block_dims, block_shape_unknown = _block_shape(_host_eval(it, kw["block"])) if "block" in kw else (None, False)
        if threads is None and "block" in kw and self_obj is not None:
            block_tie = _block_tie(it, kw["block"], self_obj)
            block_argument = _block_argument(_host_eval(it, kw["block"]), pins)
        elif threads is None and "block" in kw:
            block_argument = _launcher_parameter_block(it, kw["block"], host, pins)
        cluster = _first_dim_product(_host_eval(it, kw["cluster"])) if "cluster" in kw else 1
        grid = _first_dim_product(_host_eval(it, kw["grid"])) if "grid" in kw else None
        kparams = [p for p in site.node.params.params if p.name.value != "self"]
        for i, a in enumerate(launch.call.args):
            target = a.keyword.value if a.keyword is not None else (kparams[i].name.value if i < len(kparams) else None)
            if target is not None:
                kernel_args[target] = _host_eval(it, a.value)
    else:
        assumptions.append("no `.launch(...)` found for this kernel")

    params = {}
    for p in site.node.params.params:
        n = p.name.value
        if n == "self":
            continue
        ann = _annotation_text(p, info)
        v = kernel_args.get(n)
        passed_none = n in kernel_args and v is None and _optional_annotation(ann)  # `.launch(..., None, ...)`
        hit, pv = _pin_matches(n, pins)
        if hit:
            v = pv
            assumptions.append(f"{n} = {pv} (pinned)")
        elif _host_configuration(v):
            pass  # `NUM_CTAS=self.NUM_CTAS`: the host value, with its term (_uniform_argument)
        elif v is None or isinstance(v, Unknown) and not isinstance(v, CtaGroupOp):
            if p.default is not None:
                v = _host_eval(_quiet_interp(info, self_obj, methods), p.default)
            else:
                v = _param_default(p, ann, n)
        if passed_none and not hit:
            v = None
        elif ("Tensor" in ann) and not isinstance(v, Gmem):
            # `Optional[cute.Tensor]` / `cute.Tensor | None`: the launch may pass None.
            v = Gmem(n, optional=_optional_annotation(ann))
        if isinstance(v, Gmem) and v.name != n and not v.is_ptr:
            v = Gmem(n, optional=v.optional)
        if isinstance(v, TmaAtom) and v.name != n:
            v = TmaAtom(n, v.ctas)
        params[n] = _uniform_argument(n, v)

    if "block" in pins:
        threads = _first_dim_product(pins["block"])
        block_dims, block_shape_unknown = _block_shape(pins["block"])
        assumptions.append(f"block = {threads} threads (pinned)")
    if "cluster" in pins:
        cluster = _first_dim_product(pins["cluster"])
        assumptions.append(f"cluster = {cluster} CTAs (pinned)")
    if "grid" in pins:
        grid = _first_dim_product(pins["grid"])
    for name in sorted(defaulted):
        if name.startswith("self."):
            assumptions.append(f"{name} not known: assumed {_cluster_extent(pins)} (the modeled cluster; "
                               f"pin the real shape with `# cutespin: cluster=N`)")
            continue
        if isinstance(cluster, int) and cluster > 1:
            # The launch's cluster folded without it (`cluster=(*self.cluster_shape_mn, 1)` with the
            # shape a literal): the default only stood in for a host helper's parameter.
            continue
        assumptions.append(f"{name} not known: assumed {_cluster_shape(name, {})} (a 1-CTA cluster; "
                           f"pin the real shape with `# cutespin: cluster=(M,N)`)")
    if not isinstance(cluster, int) or cluster < 1:
        cluster = 1
        assumptions.append("cluster size not foldable: assumed 1 (pin it with `# cutespin: cluster=N`)")
    if cluster == 1:
        _one_cta_tiled_mmas(site, info, params, assumptions)
    if not isinstance(threads, int):
        threads = None
    stages = pins.get("stages")
    if stages is None:
        stages = _find_stages(self_obj, params)
    # Every stage count left unknown gets the default, even when another one folded.
    default = _assume_default_stages(self_obj, params, assumptions)
    if stages is None:
        stages = default
    if "block" in pins:
        block_tie = block_argument = None
    assumptions += list(dict.fromkeys(environment_reads))
    return KernelEnv(self_obj, params, threads, cluster, grid if isinstance(grid, int) else None,
                     stages, pins.get("loop", settings.loop_bound), assumptions, block_tie, block_argument,
                     block_dims, block_shape_unknown, host_facts, host_sites)


def pinned_select_facts(val, pinned) -> dict:
    """What pinning a select to one of its arms decides: `(2, 1) if self.NUM_CTAS == 2 else (1, 1)`
    pinned to the modeled (1, 1) holds only where `self.NUM_CTAS == 2` is False, and the kernel's
    own `if const_expr(NUM_CTAS == 2)` must take that side too (a 2-CTA path in a 1-CTA model
    arrives on a peer that is not there). {} when the pin is not exactly one arm."""
    key = val.key if type(val) is Unknown else None
    if not I.is_select(key):
        return {}
    arm = I._term(pinned)
    if arm is None or (key[4] == arm) == (key[5] == arm):
        return {}
    cond, value = key[3], key[4] == arm
    while cond[0] == "not":
        cond, value = cond[3], not value
    return I._condition_facts(cond, value)


def _block_shape(block) -> tuple:
    """(dims, unknown) of a launch's block: dims is (x, y, z) when y or z is not 1 and every extent
    folds (`block=[threads_per_row, rows, 1]`); unknown says y or z may exceed 1 but does not fold.
    A one-dimensional block gives (None, False): thread_idx()[0] is then the linear index."""
    if not isinstance(block, (tuple, list)) or len(block) < 2:
        return None, False
    dims = (tuple(block) + (1, 1))[:3]
    if all(I._is_int(r) and r == 1 for r in dims[1:]):
        return None, False
    if all(I._is_int(r) and not isinstance(r, bool) and r >= 1 for r in dims):
        return tuple(int(r) for r in dims), False
    return None, True


def _host_leaves(term) -> set:
    """The constructor arguments (`("host", 1, name)` leaves) a uniform term is computed from."""
    if not isinstance(term, tuple) or len(term) < 3:
        return set()
    if term[0] == "host":
        return {term[2]}
    out: set = set()
    for sub in term[3:]:
        out |= _host_leaves(sub)
    return out


def _block_argument(block, pins: dict) -> Optional[tuple]:
    """(argument, term) when the launch's block is a term of exactly one constructor argument
    that is not pinned (`block=(self.threads, 1, 1)`, `self.threads = 32 * (q_tile // 16 + 1)`)."""
    if isinstance(block, (tuple, list)):
        if not block or any(not (I._is_int(r) and r == 1) for r in block[1:]):
            return None
        block = block[0]
    key = block.key if isinstance(block, Unknown) else None
    leaves = _host_leaves(key)
    if len(leaves) != 1 or next(iter(leaves)) in pins:
        return None
    return next(iter(leaves)), key


def _launcher_parameter_block(it, expr: cst.BaseExpression, host, pins: dict) -> Optional[tuple]:
    """`block=(BT, 1, 1)` in a launching function whose parameter `BT` did not fold (cuDNN's norm
    launchers pass the block size on to the kernel as a Constexpr): (`BT`, its term), so that the
    block size the model takes is the value of `BT` in the kernel too (build_kernel)."""
    if not isinstance(expr, (cst.List, cst.Tuple)) or not expr.elements:
        return None
    first, rest = expr.elements[0].value, [_host_eval(it, e.value) for e in expr.elements[1:]]
    if any(not (I._is_int(r) and not isinstance(r, bool) and r == 1) for r in rest):
        return None
    params = {p.name.value for p in host.params.params}
    if not isinstance(first, cst.Name) or first.value not in params or first.value in pins:
        return None
    return first.value, I._leaf("host", first.value)


MAX_SOLVED_ARGUMENT = 4096


def _solve_block_argument(block_argument: tuple, threads: int) -> Optional[int]:
    """The smallest positive value of the constructor argument for which the block's term is
    `threads` (None if none up to MAX_SOLVED_ARGUMENT)."""
    name, term = block_argument

    def subst(t, c):
        if not isinstance(t, tuple) or len(t) < 3:
            return t
        if t[0] == "host" and t[2] == name:
            return I._leaf("k", c)
        return t[:3] + tuple(subst(x, c) for x in t[3:])

    for c in range(1, MAX_SOLVED_ARGUMENT + 1):
        if I._eval_term(subst(term, c), lambda _: None) == threads:
            return c
    return None


def _block_argument_for(block_argument: Optional[tuple], threads: int) -> tuple:
    """(argument value, block size): the value of the one constructor argument the launch's block
    is computed from that gives `threads`, or else the next whole warp group up that it gives
    (mjolnir's decode kernel: `threads_per_cta = (2 + convert_warpgroups) * 128`; 256 threads
    would need no convert warp group, which the positive argument cannot be, and a block taken
    apart from the argument left the warps of the roles it places past that block missing).
    (None, threads) when no block up to 32 warps is made by it."""
    if not block_argument:
        return None, threads
    for t in range(threads, 32 * 32 + 1, 128):
        solved = _solve_block_argument(block_argument, t)
        if solved is not None:
            return solved, t
    return None, threads


def _block_tie(it, expr: cst.BaseExpression, self_obj: SelfObj) -> Optional[tuple]:
    """`block=[self.n * k, 1, 1]` (or `[self.n, 1, 1]`, `k * self.n`) where `self.n` does not fold
    and the other dimensions and `k` do: (`n`, k)."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        elems = [e.value for e in expr.elements]
        if not elems:
            return None
        rest = [_host_eval(it, e) for e in elems[1:]]
        if any(not (isinstance(r, int) and not isinstance(r, bool) and r == 1) for r in rest):
            return None
        expr = elems[0]

    def attr(e) -> Optional[str]:
        if (isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"
                and isinstance(self_obj.attrs.get(e.attr.value), Unknown)):
            return e.attr.value
        return None

    if attr(expr):
        return attr(expr), 1
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        for a, b in ((expr.left, expr.right), (expr.right, expr.left)):
            if attr(a):
                k = _host_eval(it, b)
                if isinstance(k, int) and not isinstance(k, bool) and k > 0:
                    return attr(a), k
    return None


DEFAULT_STAGES = I.DEFAULT_STAGES


_is_stage_count_name = I.is_stage_count_name

def _assume_default_stages(self_obj, params, assumptions):
    """Stage counts usually come from shared-memory capacity arithmetic the front end cannot fold.
    Check the smallest ring that still exercises a wrap (2 stages) and say so in the verdict."""
    names = []
    if self_obj is not None:
        for k, v in self_obj.attrs.items():
            if _is_stage_count_name(k) and isinstance(v, Unknown):
                self_obj.attrs[k] = DEFAULT_STAGES
                names.append(f"self.{k}")
            elif k in self_obj.stage_defaults and v == _host_stage_default({}):
                names.append(f"self.{k}")  # defaulted where the host assigned it
    for k, v in params.items():
        if _is_stage_count_name(k) and isinstance(v, Unknown):
            params[k] = DEFAULT_STAGES
            names.append(k)
    if not names:
        return None
    assumptions.append(f"{', '.join(sorted(names))} not foldable: assumed {DEFAULT_STAGES} stages "
                       f"(pin the real value with `# cutespin: stages=N`)")
    return DEFAULT_STAGES


def _stage_counts(self_obj, params) -> set:
    """The ring lengths a kernel names: integer stage-count attributes and parameters (after
    unfoldable ones took the default)."""
    items = list(self_obj.attrs.items()) if self_obj is not None else []
    items += list(params.items())
    return {v for k, v in items if _is_stage_count_name(k) and I._is_int(v) and 0 < v <= I.MAX_UNROLL}


def _first_dim_product(v):
    if isinstance(v, int):
        return v
    if isinstance(v, (tuple, list)):
        n = 1
        for x in v:
            if not isinstance(x, int):
                return None
            n *= x
        return n
    return None


def _find_stages(self_obj, params):
    cands = []
    if self_obj is not None:
        cands += [(k, v) for k, v in self_obj.attrs.items()]
    cands += list(params.items())
    # Several rings (`num_stages_dS = 4`, `num_stages_KV = 2`): the smallest, whatever the order
    # the attributes were set in; the loop bound (2 x stages + 1) wraps it twice, and a larger
    # one would unroll past the interpretation budget on the kernels that have several.
    counts = [v for k, v in cands if _names_stage_count(k) and isinstance(v, int) and not isinstance(v, bool)
              and v > 0]
    return min(counts) if counts else None


# Words in an attribute name that make it a size, not a count (`round_stage_elements`,
# `a_stage_bytes`, `smem_layout_staged`): dsa_bwd's 4,096-element stage was taken for 4,096 stages,
# and cuDNN's sm120 MXFP8 prefill's byte offset `k_sf_stage_hi_off` (256) for 256.
_NOT_A_STAGE_COUNT = ("bytes", "elem", "layout", "size", "offset", "_off", "per_stage", "staged", "shape")


def _names_stage_count(name: str) -> bool:
    """`num_stages`, `ab_stage`, and also `num_stages_KV` (the ring named after "stages"): a stage
    count that sets the default loop bound. Looser than `is_stage_count_name` (which decides what
    takes the default stage count and which layouts are staged, and wants the name to end in
    "stage(s)"), so the kernels whose rings are named `num_stages_X` keep their loop bound."""
    low = name.lower()
    return "stage" in low and not any(w in low for w in _NOT_A_STAGE_COUNT)


# ------------------------------------------------------------------------------------------------


class _Numbering:
    """Dense numbering of barriers, regions and flags across all warps and configurations."""

    def __init__(self):
        self.barriers: dict = {}
        self.regions: dict = {}
        self.flags: dict = {}
        self.tmem_at: dict = {}  # TMEM region index -> (column offset, stage or None)
        self.derived: dict = {}  # barrier index -> (key, CTA) of barriers whose init count is derived
        self.selections: dict = {}  # region index -> [(Smem.sub, IR op)] for `_mark_merged_selections`

    def note_selection(self, target, op) -> None:
        if isinstance(target, Smem) and not target.tmem and op.region is not None:
            self.selections.setdefault(op.region.index, []).append((target.sub, op))

    def barrier(self, s: Smem) -> ir.Barrier:
        key = (s.alloc, s.cta, s.offset + (s.stage or 0))
        if key not in self.barriers:
            idx = s.offset + (s.stage or 0) - s.label_base
            name = f"{s.label}[{idx}]" if idx or s.stages or s.label_base else s.label
            self.barriers[key] = ir.Barrier(len(self.barriers), s.cta, f"{name} (CTA {s.cta})")
        return self.barriers[key]

    def region(self, target) -> Optional[ir.Region]:
        if isinstance(target, Smem) and target.tmem:
            key = ("tmem", target.cta, target.offset, target.stage)
            where = {0: "", TMEM_UNKNOWN_OFFSET: "+?"}.get(target.offset, f"+{target.offset}")
            name = (f"TMEM{where}" + (f"[stage {target.stage}]" if target.stage is not None else "")
                    + f" (CTA {target.cta})")
            space, cta = "tmem", target.cta
        elif isinstance(target, Smem):
            key = ("smem", target.alloc, target.cta, target.stage, target.block, target.atom)
            name = target.label + (f"[stage {target.stage}]" if target.stage is not None else "")
            if target.block is not None and target.block == I.ELEMENT_BLOCK_REST:
                name += "[other elements]" if target.flat or target.coord_rank else "[other slices]"
            elif target.block is not None:
                span = f"{target.block * I.ELEMENT_BLOCK}:{(target.block + 1) * I.ELEMENT_BLOCK}"
                if target.atom and isinstance(target.atom[0], tuple):
                    name += f"[{_coord_atom_span(target.atom)}] (CTA {target.cta})"
                    space, cta = "smem", target.cta
                    return self._region(key, space, cta, name, target)
                if target.atom:
                    a = target.atom
                    span = (str(a[0]) if len(a) == 1 else f"{a[0]}:{a[-1] + 1}" if a[-1] - a[0] + 1 == len(a)
                            else ",".join(map(str, a[:4])) + (",..." if len(a) > 4 else ""))
                name += (f"[{span}]" if target.flat else
                         f"[{', '.join(['...'] * (target.coord_rank - 1) + [span])}]" if target.coord_rank
                         else f"[slice {target.block}]")
            name += f" (CTA {target.cta})"
            space, cta = "smem", target.cta
        elif isinstance(target, Gmem):
            key = ("gmem", target.name, target.elem, target.slice)
            name, space, cta = f"global {target.name}", "gmem", -1
            if target.elem is not None:
                name += f"[{target.elem}]"
            if target.slice is not None:
                name += f"[slice {target.slice[1]}]"
        else:
            return None
        return self._region(key, space, cta, name, target)

    def _region(self, key, space, cta, name, target) -> ir.Region:
        if key not in self.regions:
            self.regions[key] = ir.Region(len(self.regions), space, cta, name)
            if space == "tmem":
                self.tmem_at[self.regions[key].index] = (target.offset, target.stage)
        return self.regions[key]

    def flag(self, g: Gmem) -> ir.Flag:
        key = (g.name, g.offset)
        if key not in self.flags:
            name = f"{g.name}[{g.offset}]" if g.offset else g.name
            self.flags[key] = ir.Flag(len(self.flags), name)
        return self.flags[key]


def _coord_atom_span(atom: tuple) -> str:
    """`0, 1` for the element at coordinate (0, 1); `1, 0:4` for a run of a row; else the first few."""
    leads = {e[:-1] for e in atom}
    lasts = [e[-1] for e in atom]
    if len(leads) == 1:
        lead = ", ".join(map(str, next(iter(leads))))
        run = (str(lasts[0]) if len(lasts) == 1 else f"{lasts[0]}:{lasts[-1] + 1}"
               if lasts[-1] - lasts[0] + 1 == len(lasts) else ",".join(map(str, lasts[:4])) + (",..." if len(lasts) > 4 else ""))
        return f"{lead}, {run}"
    return " | ".join(", ".join(map(str, e)) for e in atom[:3]) + (" | ..." if len(atom) > 3 else "")


def _mark_merged_selections(numbering: _Numbering) -> None:
    """A stage is one region, however its parts were selected: two TMA loads under one expect_tx
    into `sdO[None, 0, None, s]` and `sdO[None, 1, None, s]` (or into `buf.iterator + 4096 * k`)
    share it, and the model sees the second overwrite the first. Where a region's accesses and
    loads were selected by two or more different constant parts, those that were are inexact: a
    race found through them may be between disjoint parts (P16), not a counterexample."""
    for items in numbering.selections.values():
        if len({sub for sub, _ in items if sub is not None}) >= 2:
            for sub, op in items:
                if sub is not None:
                    op.exact = False


def _collect_masks(ops, acc: set):
    for op in ops:
        for attr in ("mask",):
            m = getattr(op, attr, None)
            if isinstance(m, int):
                acc.add(m)
        if isinstance(op, ir.NamedBarrier):
            acc.add(op.lanes)
        if isinstance(op, ir.Choice):
            for alt in op.alternatives:
                _collect_masks(alt, acc)


def _block_target(op) -> Optional[Smem]:
    """The shared buffer a plain load/store or a cp.async copy touches (ops split_blocks handles)."""
    if isinstance(op, I.RawAccess) and isinstance(op.target, Smem) and not op.target.tmem:
        return op.target
    if isinstance(op, I.RawCpAsync) and isinstance(op.dst, Smem):
        return op.dst
    return None


def _retarget(op, t: Smem):
    return replace(op, target=t) if isinstance(op, I.RawAccess) else replace(op, dst=t)


def _element_block(e) -> int:
    """The 32-element block an element lies in (of its last coordinate, for a coordinate tuple)."""
    return (e[-1] if isinstance(e, tuple) else e) // I.ELEMENT_BLOCK


def _buffer_atoms(named: list) -> list:
    """The atoms of a buffer's named elements: elements named by exactly the same accesses go
    together, across blocks (`named`: (access, elements) per op; the ops one access became,
    one per block, share the access, interp `emit_blocks`). Each atom is one region: an access
    touches every element of it or none."""
    sig: dict = {}
    for e in sorted({e for _, s in named for e in s}):
        sig.setdefault(frozenset(a for a, s in named if e in s), []).append(e)
    return sorted(tuple(v) for v in sig.values())


# The field of each raw op that names the shared buffer it reads or writes as data.
_DATA_FIELDS = {I.RawAccess: "target", I.RawAsyncRead: "target", I.RawCpAsync: "dst", I.RawTmaLoad: "dst",
                I.RawTmaStore: "src"}


def _data_target(op) -> Optional[Smem]:
    """The shared-memory buffer (not TMEM) an op reads or writes as data, if any."""
    field_name = _DATA_FIELDS.get(type(op))
    t = getattr(op, field_name) if field_name else None
    if isinstance(t, Smem) and not t.tmem:
        return t
    return None


def _stage_parts(t: Smem, named: list) -> list:
    """What an access of `t`, which selects no stage, touches of the stages in `named`.

    A stage is the last coordinate of the buffer (interp `_stage_index`), so the elements a full
    coordinate names (`sD[0, 0, 1]`) lie in the stages their last coordinates give (unless the
    stage mode is second to last, `(..., STAGES, N)`); the same per-warp slice of every stage for
    a slice; the whole of every stage otherwise (an element block of a flat buffer, or one whose
    coordinates are not named, may lie anywhere)."""
    if t.block is None:
        return [t.at(stage=s) for s in named]
    if not (t.flat or t.coord_rank):
        return [t.at(stage=s) for s in named]  # a per-warp slice
    if t.coord_rank and t.elems is not None and not t.inner_stages:
        named = [s for s in named if any(e[-1] == s for e in t.elems)]
    return [t.at(stage=s, block=None, elems=None, atom=None) for s in named]


def mark_dead_paths(procs) -> None:
    """Mark the sides of runtime choices whose paths raise at trace time (interp `dead_slots`) on
    their Choice, before later passes rebuild the op lists."""
    for _, _, it in procs:
        if not it.dead_slots:
            continue
        for op in ir.walk(it.out):
            if isinstance(op, ir.Choice):
                dead = tuple(i for i, alt in enumerate(op.alternatives) if id(alt) in it.dead_slots)
                if dead and len(dead) < len(op.alternatives):
                    op.dead = tuple(sorted(set(op.dead) | set(dead)))


def unstage_mixed_schemes(procs) -> None:
    """Keep a buffer's stages one numbering. A view staged on its first mode (Smem.stage_first)
    numbers stages by element ranges of its own; if the same allocation is also staged another
    way (its last mode, or a first mode of another stride or count), the same stage number would
    name different elements, so the first-mode views are taken whole instead (split_stages then
    makes each of their accesses touch every stage)."""
    schemes: dict = {}  # (alloc, cta) -> how its stage views number stages
    for _, _, it in procs:
        for op in ir.walk(it.out):
            t = _data_target(op)
            if t is not None and t.stage is not None:
                scheme = ("first", t.stages, t.stage_first) if t.stage_first is not None else ("last",)
                schemes.setdefault((t.alloc, t.cta), set()).add(scheme)
    mixed = {k for k, v in schemes.items() if len(v) > 1 and any(x[0] == "first" for x in v)}
    if not mixed:
        return

    def expand(op) -> list:
        t = _data_target(op)
        if t is None or t.stage_first is None or (t.alloc, t.cta) not in mixed:
            return [op]
        return [replace(op, **{_DATA_FIELDS[type(op)]: t.at(stage=None, stages=None, stage_first=None, nbytes=None)})]

    _rewrite_ops(procs, expand)


def split_stages(procs) -> None:
    """An access of a staged buffer that selects no stage touches every stage.

    Each stage of a buffer is its own region, and so is the buffer taken whole (`sD.store(...)`,
    `sD[None, d_buffer]` with `d_buffer` unknown, a pointer into it): on their own they would
    never conflict, and a write of the whole buffer would race with nothing a stage view reads.
    Such an access is therefore also made an access of every stage some other access selects
    (the whole-buffer region stands for the stages nobody selects). A TMA load stays one copy
    that writes all of those regions (ir.TmaLoad.more); the other copies and accesses are
    repeated per stage, the repeats of a TMA store without its global destination."""
    named: dict = {}  # (alloc, cta) -> the stages some access selects
    for _, _, it in procs:
        for op in ir.walk(it.out):
            t = _data_target(op)
            if t is not None and t.stage is not None:
                named.setdefault((t.alloc, t.cta), set()).add(t.stage)

    def expand(op) -> list:
        t = _data_target(op)
        stages = sorted(named.get((t.alloc, t.cta), ())) if t is not None and t.stage is None else []
        parts = _stage_parts(t, stages) if stages else []
        if not parts:
            return [op]
        if isinstance(op, I.RawTmaLoad):
            return [replace(op, more=op.more + tuple(parts))]
        out = [op]
        for part in parts:
            extra = {_DATA_FIELDS[type(op)]: part}
            if isinstance(op, I.RawTmaStore):
                extra["dst"] = None
            out.append(replace(op, **extra))
        return out

    _rewrite_ops(procs, expand)


def _whole(dst: Smem) -> Smem:
    """The buffer (or stage) a copy writes part of."""
    return replace(dst, offset=0, sub=None)


def merge_tma_batches(procs, registry: I.Registry) -> None:
    """Merge TMA loads issued back to back by the same lanes on the same barrier into different
    constant parts of one buffer (frost's `tma_load_tile`: a sub-tile per copy; `sdO[None, k,
    None, s]` for k in 0, 1; views at constant offsets from the buffer's start) into one load of
    `copies` copies (ir.TmaLoad.copies).

    A region does not tell the parts of a stage apart, so as separate loads each would overwrite
    the one before it while it is in flight, a race between disjoint parts (P16). Merged, the batch
    writes the stage once and completes every copy's transaction bytes. That the parts are disjoint
    is an assumption, stated in the verdict: a copy's box extent is not tracked, only where it
    starts. Copies at an index that did not fold, or at the same part twice, are never merged."""
    def mergeable(batch: list, op) -> bool:
        first = batch[0]
        if not (isinstance(op, I.RawTmaLoad) and isinstance(op.dst, Smem) and isinstance(first.dst, Smem)):
            return False
        # A part is where the copy starts (`Smem.sub`): a sub-view, a constant index, or a constant
        # offset (`make_tensor(buf.iterator + k * 4096, layout)`, cuDNN's paired KV tiles).
        if op.dst.inexact or first.dst.inexact or op.dst.tmem or op.dst.sub in {b.dst.sub for b in batch}:
            return False
        same = ("bar", "mask", "pair", "mcast", "what")
        # `more` (the stages a copy into the whole buffer writes too, split_stages) names the
        # stage parts at the copy's own offset: the same stages are the same writes.
        return all(getattr(op, f) == getattr(first, f) for f in same) and _whole(op.dst) == _whole(first.dst) \
            and tuple(map(_whole, op.more)) == tuple(map(_whole, first.more))

    def merged(batch: list):
        if len(batch) == 1:
            return batch[0]
        # A part's own bytes are not known (a view's byte count is its whole stage's): unless
        # every copy states what it completes, the batch counts in units (`_assign_tx_units`).
        sizes = [b.nbytes for b in batch]
        first = batch[0]
        where = f"{first.span.path.rsplit('/', 1)[-1]} line {first.span.line}" if first.span.path \
            else f"line {first.span.line}"
        registry.assume(f"TMA loads issued back to back on {first.dst.label} ({where}) into different parts of it "
                        f"write disjoint parts (where each starts is known, not its extent)")
        return replace(first, dst=first.dst.at(sub=("batch", tuple(b.dst.sub for b in batch)), nbytes=None),
                       nbytes=sum(sizes) if None not in sizes else None, copies=sum(b.copies for b in batch))

    def rewrite(ops: list) -> list:
        out, batch, between = [], [], []

        def flush():
            # The global reads of the batch's later copies (their sources) go before the merged load.
            out.extend(between + [merged(batch)] if len(batch) > 1 else batch + between)
            batch.clear()
            between.clear()

        for op in ops:
            if isinstance(op, ir.Choice):
                op.alternatives = [rewrite(alt) for alt in op.alternatives]
            if batch and mergeable(batch, op):
                batch.append(op)
                continue
            if batch and isinstance(op, I.RawAccess) and isinstance(op.target, Gmem) and not op.write:
                between.append(op)  # the next copy's source, read at issue
                continue
            if batch:
                flush()
            if isinstance(op, I.RawTmaLoad) and isinstance(op.dst, Smem):
                batch.append(op)
            else:
                out.append(op)
        if batch:
            flush()
        return out

    for _, _, it in procs:
        it.out[:] = rewrite(it.out)


def _rewrite_ops(procs, expand: Callable) -> None:
    """Replace every op of every warp's output (inside runtime choices too) by `expand(op)`."""
    def rewrite(ops: list) -> list:
        out = []
        for op in ops:
            if isinstance(op, ir.Choice):
                op.alternatives = [rewrite(alt) for alt in op.alternatives]
                out.append(op)
            else:
                out += expand(op)
        return out

    for _, _, it in procs:
        it.out[:] = rewrite(it.out)


def split_blocks(procs) -> None:
    """Make the element blocks of flat SMEM buffers sound (see interp `_element_sets`).

    A buffer read or written at per-lane indices got one access per 32-element block; every other
    access to it (unknown index, whole-buffer copy) touches all of those blocks plus the rest.
    A buffer that asynchronous copies, TMA or MMAs touch, or that has too many blocks, goes back
    to one region. When every block access names its elements, a block is further split into
    atoms, the elements that exactly the same accesses name (`acc[warp]` by each warp's lane 0,
    `acc[n_warps]` by warp 0: five atoms of block 0), as long as the atoms stay few; two accesses
    then conflict exactly when they name a common element."""
    blocks: dict = {}  # (alloc, cta, stage) -> block numbers
    flat: dict = {}  # (alloc, cta, stage) -> whether its blocks are element blocks
    other: set = set()  # buffers that non-plain ops touch
    named: dict = {}  # (alloc, cta, stage) -> [(access, element set)], None once one access lacks them
    unique = itertools.count()
    for _, _, it in procs:
        for op in ir.walk(it.out):
            t = _block_target(op)
            if t is not None:
                if t.block is not None:
                    k = (t.alloc, t.cta, t.stage)
                    blocks.setdefault(k, set()).add(t.block)
                    # element blocks (of the offset or of the last coordinate), not per-warp slices
                    flat[k] = (t.flat, t.coord_rank)
                    if t.elems is None or not isinstance(op, I.RawAccess):
                        named[k] = None
                    elif named.get(k, []) is not None:
                        access = ("origin", op.origin) if op.origin else ("op", next(unique))
                        named.setdefault(k, []).append((access, set(t.elems)))
            else:
                for attr in ("dst", "src", "target", "bar"):
                    t = getattr(op, attr, None)
                    if isinstance(t, Smem):
                        other.add(t.alloc)
    # A buffer whose block accesses all name their elements is split into atoms (however many
    # blocks they span: `(tid + k * BT) * V` vectors name V blocks per warp); any other, or one
    # with too many atoms, into its blocks. Past MAX_ELEMENT_BLOCKS blocks it stays one region.
    atoms: dict = {}  # (alloc, cta, stage) -> [atoms]
    for k in blocks:
        if k[0] not in other and named.get(k):
            found = _buffer_atoms(named[k])
            if len(found) <= I.MAX_ELEMENT_BLOCKS:
                atoms[k] = found
    keep = {k: sorted(v) + [I.ELEMENT_BLOCK_REST] for k, v in blocks.items()
            if k[0] not in other and (k in atoms or len(v) <= I.MAX_ELEMENT_BLOCKS)}
    # Buffers whose per-lane accesses named blocks or elements the model then merges (too many
    # blocks, or too many atoms): two such accesses share a region though on the GPU they may
    # touch different elements, so a race between them is not proven (P16).
    coarse = {k for k in blocks if k[0] not in other and (k not in keep or named.get(k) and k not in atoms)}

    def parts(k, b, elems=None) -> list:
        """The (block, atom) pieces of buffer k that an access of block b naming elems touches
        (every piece of block b when elems is None)."""
        if b == I.ELEMENT_BLOCK_REST or k not in atoms:
            return [(b, None)]
        if elems is None:
            return [(_element_block(a[0]), a) for a in atoms[k] if any(_element_block(e) == b for e in a)]
        return [(_element_block(a[0]), a) for a in atoms[k] if set(a) & set(elems)]

    def expand(op) -> list:
        t = _block_target(op)
        if t is None:
            return [op]
        k = (t.alloc, t.cta, t.stage)
        if t.block is not None and k in coarse and isinstance(op, I.RawAccess):
            op = replace(op, exact=False)
        if t.block is not None and k not in keep:
            return [_retarget(op, t.at(block=None, elems=None))]  # the whole buffer after all
        if t.block is not None:
            return [_retarget(op, t.at(block=b, elems=None, atom=a)) for b, a in parts(k, t.block, t.elems)]
        if k in keep:
            # Every block of its stage (split_stages has made an access of a whole staged
            # buffer an access of each stage too); an atom spanning blocks once.
            pieces = dict.fromkeys(p for b0 in keep[k] for p in parts(k, b0))
            return [_retarget(op, t.at(block=b, atom=a, flat=flat[k][0], coord_rank=flat[k][1])) for b, a in pieces]
        return [op]

    _rewrite_ops(procs, expand)


def split_gmem_elements(procs, registry) -> None:
    """Global tensors are tracked whole, except elements the kernel names by a folded index on
    the argument itself (`mFlags[3]`, interp `gmem_element`): each such element is a region of
    its own, so `mData[1000]` and `mData[2000]` do not conflict. Every other access of the tensor
    also touches each named element it may reach: all of them, or for per-lane indices
    (`mData[tidx]`) the ones among its lanes' elements. A tensor a TMA store writes stays whole."""
    named: dict = {}  # tensor -> element indices named
    whole: set = set()  # tensors other ops touch as a whole
    for _, _, it in procs:
        for op in ir.walk(it.out):
            if isinstance(op, I.RawAccess) and isinstance(op.target, Gmem) and op.target.elem is not None:
                named.setdefault(op.target.name, set()).add(op.target.elem)
            elif isinstance(op, I.RawTmaStore) and isinstance(op.dst, Gmem):
                whole.add(op.dst.name)
    if not named:
        return
    for name in sorted(named):
        if name not in whole:
            registry.assume(f"constant indices into global tensor {name} name distinct elements (its layout is "
                            f"injective): each element the kernel names is checked on its own")

    def expand(op) -> list:
        if not (isinstance(op, I.RawAccess) and isinstance(op.target, Gmem) and op.target.name in named):
            return [op]
        t = op.target
        if t.name in whole:
            return [replace(op, target=replace(t, elem=None))] if t.elem is not None else [op]
        if t.elem is not None:
            return [op]
        reach = sorted(named[t.name] if t.index_set is None else named[t.name] & t.index_set)
        return [op] + [replace(op, target=replace(t, elem=e)) for e in reach]

    _rewrite_ops(procs, expand)


def split_gmem_slices(procs, registry) -> None:
    """Views of a global tensor cut into equal pieces (`make_tensor(ws.iterator + c * n,
    make_layout((n,), stride=(1,)))`, interp `h_make_tensor`: cuDNN frost's prologues give each
    warp its own descriptor array in one workspace) are regions of their own, slice by slice;
    an access of the tensor as a whole also touches every slice. The accesses through a slice,
    raw pointer arithmetic from its iterator included, are taken to stay in it. A tensor some
    other operation touches (a TMA copy, an element `ws[3]`), or cut in pieces of different
    extents, stays whole."""
    slices: dict = {}  # tensor -> slices accessed
    whole: set = set()
    for _, _, it in procs:
        for op in ir.walk(it.out):
            for t in _gmem_operands(op):
                if t.slice is not None and isinstance(op, I.RawAccess) and t.elem is None:
                    slices.setdefault(t.name, set()).add(t.slice)
                elif t.slice is not None or not isinstance(op, I.RawAccess) or t.elem is not None:
                    whole.add(t.name)
    # Slices of one extent are disjoint; pieces of different extents may overlap (`[0, 2n)` and
    # `[n, 2n)`): such a tensor stays whole.
    kept = {name: sorted(v, key=repr) for name, v in slices.items()
            if name not in whole and len({extent for extent, _ in v}) == 1}
    for name in sorted(kept):
        registry.assume(f"views of global tensor {name} at multiples of their extent are disjoint slices of it, "
                        f"and accesses through a slice (pointer arithmetic from its iterator included) stay in it")
    if not slices:
        return

    def expand(op) -> list:
        if not isinstance(op, I.RawAccess) or not isinstance(op.target, Gmem) or op.target.name not in slices:
            return [op]
        t = op.target
        if t.name not in kept:
            return [replace(op, target=replace(t, slice=None))] if t.slice is not None else [op]
        if t.slice is not None:
            return [op]
        return [op] + [replace(op, target=replace(t, slice=sl)) for sl in kept[t.name]]

    _rewrite_ops(procs, expand)


def _gmem_operands(op) -> list:
    """The global tensors an op names in its fields."""
    return [v for f in fields(op) for v in [getattr(op, f.name)] if isinstance(v, Gmem)] \
        if hasattr(op, "__dataclass_fields__") else []


def _written_gmem(procs) -> set:
    """Names of the GMEM tensors any warp writes (stores, flag updates, TMA stores, atomics)."""
    out = set()
    for _, _, it in procs:
        for op in ir.walk(it.out):
            if isinstance(op, I.RawAccess) and op.write and isinstance(op.target, Gmem):
                out.add(op.target.name)
            elif isinstance(op, I.RawFlagUpdate):
                out.add(op.flag.name)
            elif isinstance(op, I.RawTmaStore) and isinstance(op.dst, Gmem):
                out.add(op.dst.name)
    return out


def _settle_data_atomics(processes: list, registry: I.Registry) -> None:
    """Relaxed atomics that are not flag updates (float max into an output, `red.add` into a
    tensor) order nothing; they matter only to a kernel that waits on GMEM, where they may be the
    other half of a flag protocol we cannot see. Unmodeled there, an assumption elsewhere."""
    waits = _has_ops(processes, ir.FlagWait)
    _settle_gmem_items(registry, registry.data_atomics, waits, "the kernel waits on GMEM, so it may be part of "
                       "that protocol", "relaxed GMEM atomics (line {lines}) are data reductions: nothing in the "
                       "kernel waits on GMEM, so they order nothing")


def _settle_untracked_gmem(processes: list, registry: I.Registry) -> None:
    """Global loads and stores through addresses that did not resolve (inline PTX of an integer
    address) cannot be placed in any tensor. Global memory is a handoff the model checks only in
    a kernel that synchronizes through GMEM flags (model.promela tracks GMEM regions only then):
    there they are unmodeled; elsewhere they are plain data and the verdict says so."""
    flags = _has_ops(processes, (ir.FlagWait, ir.FlagUpdate))
    _settle_gmem_items(registry, registry.untracked_gmem, flags, "the kernel synchronizes through GMEM flags, so "
                       "it may be part of that handoff", "global loads and stores through addresses that did not "
                       "resolve (line {lines}) are plain data: nothing in the kernel synchronizes through global memory")


def _has_ops(processes: list, kinds) -> bool:
    return any(isinstance(op, kinds) for p in processes for v in p.variants for op in ir.walk(v))


def _settle_gmem_items(registry: I.Registry, recorded: dict, unmodeled: bool, why: str, assumption: str) -> None:
    """Operations recorded while interpreting whose meaning depends on the whole kernel: unmodeled
    (with `why` added) when `unmodeled`, else one stated assumption naming their lines."""
    if not recorded:
        return
    items = sorted(recorded.values(), key=lambda u: (u.path, u.line))
    if unmodeled:
        for u in items:
            registry.add_unmodeled(ir.Unmodeled(u.line, u.construct, f"{u.why}; {why}", u.path))
        return
    lines = ", ".join(str(u.line) for u in items[:8]) + (", ..." if len(items) > 8 else "")
    registry.assume(assumption.format(lines=lines))


def derive_arrival_counts(processes: list, derived: dict) -> None:
    """Initialise the barriers whose count the source does not fold with the arrivals made on them.

    A pipeline group sized at run time (`CooperativeGroup(Agent.Thread, self.num_threads)` with
    an unfoldable attribute) still has a fixed set of arriving warps in the model. Per phase each
    warp arrives once on a stage barrier, so the count is, over the warps that arrive on any
    barrier sharing the key (the pipeline's side, in one CTA), the sum of each warp's largest
    single arrive. The assumption is stated where the pipeline is created.

    Per configuration, as `derive_named_barrier_threads`: a warp that exists in one build only
    (cuDNN's MoE GEMMs' bias-load warp, `if const_expr(self.enable_bias)`, counted in the tile
    pipeline's consumer group only when it is there) arrives only in that build's
    configurations, and counting it in the others would wait for a warp that is never there.

    A warp that arrives on the key only inside an alternative of a choice (a runtime branch, or
    a uniform condition the budget left unsplit: the same bias-load warp when `enable_bias` is
    not a configuration of its own) may make no arrival at all in a run; the count is then too
    high for that run, and its barriers are marked (`MbInit.count_from_choice`) so that a
    deadlock there is reported as possible, as for named barriers.
    """
    if not derived:
        return
    totals: dict = {}  # (configuration, key) -> arrivals per phase
    chosen: set = set()  # (configuration, key) with a warp that arrives only under a choice
    for p in processes:
        largest: dict = {}
        always: set = set()
        for c, ops in enumerate(p.variants):
            for op, under in ir.walk_choices(ops):
                if isinstance(op, ir.MbArrive) and op.bar.index in derived:
                    key = (c, derived[op.bar.index])
                    largest[key] = max(largest.get(key, 0), op.count)
                    if not under:
                        always.add(key)
        for key, n in largest.items():
            totals[key] = totals.get(key, 0) + n
        chosen |= set(largest) - always
    for p in processes:
        for c, ops in enumerate(p.variants):
            for op in ir.walk(ops):
                if isinstance(op, ir.MbInit) and op.bar.index in derived:
                    op.count = max(1, totals.get((c, derived[op.bar.index]), 0))
                    op.count_from_choice = (c, derived[op.bar.index]) in chosen


def derive_named_barrier_threads(processes: list) -> None:
    """Give a named barrier whose thread count does not fold the threads of every warp (of the
    CTA) that arrives on or syncs with that barrier id in the same configuration (the assumption
    is stated at the call). Per configuration, because the configurations may give the warps
    different roles: with `if warp == num_compute_warps:` over an unfolded constant, warp 1 is the
    producer in one configuration and a consumer in another, and counting the users of every
    configuration together would wait for a warp that is never there. A count that is such an
    unknown plus a constant (`num_epilogue_threads + WARP_SIZE`, for an epilogue whose TMA-store
    warp arrives twice) is the value derived where the unknown alone is the count, plus the
    constant."""
    users: dict = {}  # (cta, config, barrier id) -> warps
    chosen: set = set()  # (cta, config, barrier id) used by some warp under a runtime choice
    for p in processes:
        for c, ops in enumerate(p.variants):
            for op, under in ir.walk_choices(ops):
                if isinstance(op, ir.NamedBarrier):
                    users.setdefault((p.cta, c, op.barrier_id), set()).add(p.warp)
                    if under:
                        chosen.add((p.cta, c, op.barrier_id))
    plain: dict = {}  # (cta, config, term) -> threads derived where the term alone is the count
    for p in processes:
        for c, ops in enumerate(p.variants):
            for op in ir.walk(ops):
                d = op.threads if isinstance(op, ir.NamedBarrier) else None
                if isinstance(d, I.DerivedThreads) and d.term is not None and d.offset == 0:
                    plain.setdefault((p.cta, c, d.term), 32 * len(users[(p.cta, c, op.barrier_id)]))
    for p in processes:
        for c, ops in enumerate(p.variants):
            for op in ir.walk(ops):
                d = op.threads if isinstance(op, ir.NamedBarrier) else None
                if not isinstance(d, I.DerivedThreads):
                    continue
                base = plain.get((p.cta, c, d.term)) if d.offset else None
                op.threads = base + d.offset if base is not None and base + d.offset > 0 else \
                    32 * len(users[(p.cta, c, op.barrier_id)])
                op.count_from_choice = (p.cta, c, op.barrier_id) in chosen


def lane_partition(masks: set, elected: set) -> list:
    """The coarsest partition of the 32 lanes that every mask is a union of."""
    blocks = {}
    for lane in range(32):
        sig = tuple(bool(m >> lane & 1) for m in sorted(masks))
        blocks.setdefault(sig, []).append(lane)
    classes = [ir.LaneClass(tuple(lanes), elected=len(lanes) == 1 and lanes[0] in elected)
               for lanes in blocks.values()]
    return sorted(classes, key=lambda c: c.lanes[0])


def _class_mask(mask: int, classes: list) -> int:
    out = 0
    for i, c in enumerate(classes):
        if any(mask >> lane & 1 for lane in c.lanes):
            out |= 1 << i
    return out


class _Converter:
    """Raw interpreter ops -> IR ops (numbered barriers, regions, lane classes, tx units)."""

    def __init__(self, numbering: _Numbering, classes: list, registry: I.Registry):
        self.n = numbering
        self.classes = classes
        self.registry = registry
        self.wgmma = False  # the warp commits/waits warpgroup MMA groups: its MMA operand reads are asynchronous
        # The warp's MMA operand reads are tcgen05 ones (`_async_mma_kinds`): they go on until the
        # warp's next tcgen05.commit (a UMMA pipeline's commit or release).
        self.umma = False

    def lanes(self, mask):
        return _class_mask(mask, self.classes)

    def count(self, mask):
        return bin(mask).count("1")

    def convert(self, ops) -> list:
        out = []
        for op in ops:
            c = self.one(op)
            if c is not None:
                out.append(c)
        return out

    def one(self, op):
        if isinstance(op, I.RawInit):
            bar = self.n.barrier(op.bar)
            if op.derive is not None:
                self.n.derived[bar.index] = (op.derive, bar.cta)
            return ir.MbInit(op.span, bar, op.count if op.count is not None else 1)
        if isinstance(op, I.RawArrive):
            bar = self.n.barrier(op.bar)
            lanes = self.count(op.mask)
            tx = None if op.tx is None else op.tx * lanes
            if op.expect_only:
                return ir.MbExpectTx(op.span, bar, tx if tx is not None else 0, tx is not None)
            return ir.MbArrive(op.span, bar, op.count_per_lane * lanes, self.lanes(op.mask), op.scope, op.remote,
                               op.release, tx if tx is not None else 0,
                               tx_known=op.tx is not None, cp_async=op.cp_async)
        if isinstance(op, I.RawWait):
            return ir.MbWait(op.span, self.n.barrier(op.bar), op.parity, self.lanes(op.mask))
        if isinstance(op, I.RawTmaLoad):
            region = self.n.region(op.dst) if op.dst is not None else None
            nbytes = op.nbytes if op.nbytes is not None else op.dst.nbytes if op.dst is not None else None
            load = ir.TmaLoad(op.span, self.n.barrier(op.bar), region, nbytes or 0, self.lanes(op.mask),
                              tx_known=nbytes is not None, pair=op.pair, mcast=op.mcast, exact=_exact(op.dst),
                              more=tuple(self.n.region(t) for t in op.more), what=op.what, copies=op.copies)
            self.n.note_selection(op.dst, load)
            return load
        if isinstance(op, I.RawTmaStore):
            return ir.TmaStore(op.span, self.n.region(op.src), self.lanes(op.mask),
                               self.n.region(op.dst) if isinstance(op.dst, Gmem) else None, exact=_exact(op.src))
        if isinstance(op, I.RawAccess) and isinstance(op.target, Smem) and op.target.stage == TMEM_ALL_STAGES:
            return _WholeTmem(op.span, op.target.cta, op.write, self.lanes(op.mask))
        if isinstance(op, I.RawAccess):
            region = self.n.region(op.target)
            if region is None:
                return None
            access = ir.Access(op.span, region, op.write, self.lanes(op.mask), op.async_read,
                               part=getattr(op.target, "part", None), exact=op.exact)
            self.n.note_selection(op.target, access)
            return access
        if isinstance(op, I.RawCpAsync):
            region = self.n.region(op.dst)
            return ir.CpAsyncCopy(op.span, region, self.lanes(op.mask), op.dst.part, exact=_exact(op.dst))
        if isinstance(op, I.RawCpAsyncWait):
            return ir.CpAsyncWait(op.span, op.pending, self.lanes(op.mask))
        if isinstance(op, I.RawAsyncRead):
            region = self.n.region(op.target)
            if region is None:
                return None
            if op.kind == "mma" and not self.wgmma and not self.umma:
                # An MMA whose completion is tracked neither by warpgroup groups nor by a
                # tcgen05.commit of the warp: its operand read is taken at issue.
                return ir.Access(op.span, region, False, self.lanes(op.mask), part=op.target.part,
                                 exact=_exact(op.target))
            kind = "wgmma" if op.kind in ("mma", "umma") and self.wgmma else \
                "umma" if op.kind == "mma" else op.kind
            return ir.AsyncRead(op.span, region, self.lanes(op.mask), kind, exact=_exact(op.target))
        if isinstance(op, I.RawAsyncReadWait):
            if op.kind == "umma" and not self.umma:
                return None  # a commit in a warp that issues no tcgen05 MMA read: nothing to retire
            return ir.AsyncReadWait(op.span, op.pending, self.lanes(op.mask), op.kind)
        if isinstance(op, I.RawFence):
            return ir.Fence(op.span, op.kind, op.scope, self.lanes(op.mask))
        if isinstance(op, I.RawFlagUpdate):
            return ir.FlagUpdate(op.span, self.n.flag(op.flag), op.op, op.value, op.release_scope,
                                 self.lanes(op.mask), self.count(op.mask))
        if isinstance(op, I.RawFlagWait):
            acq = op.scope if op.sem in ("acquire", "acq_rel") else None
            return ir.FlagWait(op.span, self.n.flag(op.flag), op.cmp, op.value, acq, self.lanes(op.mask))
        if isinstance(op, ir.NamedBarrier):
            return ir.NamedBarrier(op.span, op.barrier_id, op.threads, op.arriving, op.wait, self.lanes(op.lanes),
                                   id_text=op.id_text)
        if isinstance(op, ir.Choice):
            return ir.Choice(op.span, [self.convert(alt) for alt in op.alternatives], op.shared,
                             op.swapped, op.enum, op.compile_time, op.dead, op.follows)
        return op



def _exact(target) -> bool:
    """Whether a copy's shared-memory side was selected with indices that all folded."""
    return not getattr(target, "inexact", False)


def _assign_tx_units(processes: list, registry: I.Registry):
    """Where a barrier's byte counts are not all known, count one unit per TMA copy instead.

    Assumption (stated in the verdict): the expected bytes equal what the copies that follow the
    expect deliver."""
    unknown_bars = set()
    for p in processes:
        for ops in p.variants:
            for op in ir.walk(ops):
                if isinstance(op, ir.TmaLoad) and not op.tx_known:
                    unknown_bars.add(op.bar.index)
                if isinstance(op, (ir.MbArrive, ir.MbExpectTx)) and not op.tx_known:
                    unknown_bars.add(op.bar.index)
    if not unknown_bars:
        return
    names = {}
    pairs: set = set()
    mcasts: dict = {}
    for op in _count_units(processes, unknown_bars, names, pairs, mcasts):
        registry.add_unmodeled(ir.Unmodeled(op.span.line, "mbarrier expect_tx",
                                            f"the expected bytes on {op.bar.name} do not fold and the sides of a "
                                            f"runtime branch issue different numbers of TMA copies completing them",
                                            op.span.path))
    for op in _orphan_expects(processes, unknown_bars):
        # The tutorial TMA transpose: thread 0 expects the bytes at init, the TMA warp copies.
        # Which copies complete that expect is not known, so its count is not modeled (it
        # counted none, and the first arrive then completed the phase before the data landed).
        registry.add_unmodeled(ir.Unmodeled(op.span.line, "mbarrier expect_tx",
                                            f"the expected bytes on {op.bar.name} do not fold and no TMA copy follows "
                                            f"in the same warp: which copies complete them is not known",
                                            op.span.path))
    for name in sorted(set(names.values())):
        registry.assume(f"transaction bytes on {name} match the TMA copies that complete it (byte counts not foldable)")
    for name in sorted(pairs):
        registry.assume(f"2-CTA TMA: the pair leader's expected bytes on {name} cover, for each copy it issues, the "
                        f"same copy issued by its peer CTA (byte counts not foldable)")
    for name, n in sorted(mcasts.items()):
        registry.assume(f"multicast TMA: the expected bytes on {name} cover, for each copy its CTA multicasts to "
                        f"{n} CTAs, the same copy multicast by each of the others (byte counts not foldable)")


def _orphan_expects(processes: list, unknown_bars: set) -> list:
    """Expects of unknown byte counts that no copy of their own warp counted into (`_units_in`)
    while copies on that barrier exist in other warps."""
    expects, copiers = [], {}
    for pi, p in enumerate(processes):
        for ops in p.variants:
            for op in ir.walk(ops):
                if isinstance(op, ir.MbExpectTx) and op.bar.index in unknown_bars and op.tx == 0:
                    expects.append((pi, op))
                elif isinstance(op, ir.TmaLoad) and op.bar.index in unknown_bars:
                    copiers.setdefault(op.bar.index, set()).add(pi)
    return [op for pi, op in expects if copiers.get(op.bar.index, set()) - {pi}]


def _units_in(ops, unknown_bars, names, pairs, mcasts, pending=None, unclaimed=None) -> dict:
    """Count one unit per TMA copy into the latest expect on its barrier before it, following the
    program's structure: the copies on the sides of a runtime branch (frost issues the Q tile or
    the K tile into the same stage) count once when every side issues as many, never as their sum.
    A copy issued before any expect of its warp on that barrier counts into the warp's next expect
    on it, provided the warp does not wait on the barrier in between (cuDNN QSA: the Q copy, then
    `mbarrier_arrive_and_expect_tx`; the transaction count may go below zero meanwhile).

    Expects that follow each other on one barrier with no copy or wait between them are one
    expect: the copies after them count into the first (cuDNN's block-sparse backward adds
    `mbarrier_expect_tx` to the bytes `producer_acquire` already expects; counted into the second
    alone, the acquire's arrive would complete the phase before any copy landed).

    Returns {id(expect): [expect, units, sides disagree]} and leaves the counting to the caller."""
    pending = [] if pending is None else pending  # expect ops waiting for their copies, in order
    unclaimed = {} if unclaimed is None else unclaimed  # barrier -> units of copies no expect took yet
    counts: dict = {}
    fresh: dict = {}  # barrier -> its latest expect, while no copy or wait has followed it
    for op in ops:
        if isinstance(op, (ir.MbArrive, ir.MbExpectTx)) and op.bar.index in unknown_bars and (
                isinstance(op, ir.MbExpectTx) or op.tx or not op.tx_known):
            op.tx = 0
            op.tx_known = True
            names[op.bar.index] = op.bar.name
            if op.bar.index in fresh:
                continue  # part of the expect before it, which the copies count into
            pending.append(op)
            fresh[op.bar.index] = op
            if unclaimed.get(op.bar.index):
                counts.setdefault(id(op), [op, 0, False])[1] += unclaimed.pop(op.bar.index)
        elif isinstance(op, ir.MbWait):
            fresh.pop(op.bar.index, None)
            unclaimed.pop(op.bar.index, None)  # a later phase's expect is not this copy's
        elif isinstance(op, ir.TmaLoad) and op.bar.index in unknown_bars:
            fresh.pop(op.bar.index, None)
            op.tx = op.copies
            op.tx_known = True
            units = op.copies * (2 if op.pair else 1) * op.mcast
            if op.pair:
                pairs.add(op.bar.name)
            if op.mcast > 1:
                mcasts[op.bar.name] = op.mcast
            expect = next((e for e in reversed(pending) if e.bar.index == op.bar.index), None)
            if expect is not None:
                counts.setdefault(id(expect), [expect, 0, False])[1] += units
            else:
                unclaimed[op.bar.index] = unclaimed.get(op.bar.index, 0) + units
        elif isinstance(op, ir.Choice):
            fresh.clear()
            before = list(pending)
            before_unclaimed = dict(unclaimed)
            sides, sides_unclaimed = [], []
            for alt in op.alternatives:
                side_pending = list(before)
                side_unclaimed = dict(before_unclaimed)
                sides.append(_units_in(alt, unknown_bars, names, pairs, mcasts, side_pending, side_unclaimed))
                sides_unclaimed.append(side_unclaimed)
                pending.extend(e for e in side_pending[len(before):] if e not in pending)
            unclaimed.clear()
            for bar in {b for side in sides_unclaimed for b in side}:
                unclaimed[bar] = max(side.get(bar, 0) for side in sides_unclaimed)
            for key in {k for side in sides for k in side}:
                expect = next(side[key][0] for side in sides if key in side)
                if not any(id(e) == key for e in before):  # the expect itself is on one side only
                    amounts = [side[key][1] for side in sides if key in side]
                else:
                    amounts = [side[key][1] if key in side else 0 for side in sides]
                entry = counts.setdefault(key, [expect, 0, False])
                entry[1] += max(amounts)
                entry[2] = entry[2] or len(set(amounts)) > 1 or any(side[key][2] for side in sides if key in side)
    return counts


def _count_units(processes: list, unknown_bars: set, names: dict, pairs: set, mcasts: dict) -> list:
    """Set each unknown-byte expect's count from the copies that follow it; the expects whose
    count differs between the sides of a runtime branch (not modeled: one count cannot stand for
    both) are returned."""
    uneven = []
    for p in processes:
        for ops in p.variants:
            for expect, units, disagree in _units_in(ops, unknown_bars, names, pairs, mcasts).values():
                expect.tx += units
                if disagree:
                    uneven.append(expect)
    return uneven


def _package_notes(info: ModuleInfo, registry: I.Registry) -> list:
    """The sibling modules followed (dependencies), and an assumption per module a cap stopped."""
    project = info.project
    if project is None:
        return []
    for dotted, why in project.limits:
        registry.assume(f"module {dotted} of the package not followed ({why}): calls into it are treated as "
                        f"unknown calls")
    return sorted(project.deps)


def _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound,
               splits: Optional[dict] = None) -> ir.KernelModel:
    """A kernel too large to interpret: no processes, the reason recorded as unmodeled. `splits`:
    the uniform conditions found so far that would have been configurations of their own."""
    return ir.KernelModel(
        name=site.name, qualname=site.qualname, path=path, line=def_span.line, def_span=def_span, ctas=ctas,
        cluster_size=cluster, warps=warps, processes=[], barriers=[], regions=[], flags=[], configs=[],
        assumptions=list(registry.assumptions),
        unmodeled=sorted(registry.unmodeled.values(), key=lambda u: (u.line, u.construct)),
        bounds={"loop": bound, "stages": env.stages, "cluster": cluster}, static_findings=list(registry.statics),
        strict=settings.strict, deps=_package_notes(info, registry), loop_chosen=env.loop_bound is not None,
        splits_left=bool(splits))


@dataclass
class _WholeTmem(ir.Op):
    """Placeholder for an access of every TMEM stage of a CTA (dealloc), resolved by `_resolve_tmem`
    once every warp is converted and the stages in use are known."""

    cta: int
    write: bool
    lanes: int


def _resolve_tmem(processes, numbering):
    """TMEM buffers of one CTA: one per (constant column offset, accumulator stage). An access
    that names no stage covers every stage at its offset, and an access at an offset that did not
    fold covers the CTA's whole TMEM: those buffers are merged into the wider one, so that such an
    access conflicts with everything it may touch. Then each dealloc placeholder becomes an access
    of each remaining buffer of its CTA."""
    ops_all = [op for p in processes for v in p.variants for op in ir.walk(v)]
    tmem = [op for op in ops_all if isinstance(op, (ir.Access, ir.AsyncRead)) and op.region.space == "tmem"]
    wider: dict = {}  # (cta, offset or None for all) -> the region covering it
    for op in tmem:
        offset, stage = numbering.tmem_at[op.region.index]
        if offset == TMEM_UNKNOWN_OFFSET:
            wider.setdefault((op.region.cta, None), op.region)
        elif stage is None:
            wider.setdefault((op.region.cta, offset), op.region)
    for op in tmem:
        offset, _ = numbering.tmem_at[op.region.index]
        whole = wider.get((op.region.cta, None))
        region = whole or wider.get((op.region.cta, offset)) or op.region
        if whole is not None and offset != TMEM_UNKNOWN_OFFSET:
            # A buffer of known columns and stage taken as a wider one (dsa_bwd's S and dP
            # accumulators, both in the whole TMEM once another buffer's offset did not fold): a
            # race between two such buffers may be between different columns (P16).
            op.exact = False
        op.region = region
    regions: dict = {}
    for op in tmem:
        regions.setdefault(op.region.cta, {})[op.region.index] = op.region

    def expand(ops):
        out = []
        for op in ops:
            if isinstance(op, _WholeTmem):
                for r in sorted(regions.get(op.cta, {}).values(), key=lambda r: r.index):
                    out.append(ir.Access(op.span, r, op.write, op.lanes, what="dealloc"))
            elif isinstance(op, ir.Choice):
                op.alternatives = [expand(alt) for alt in op.alternatives]
                out.append(op)
            else:
                out.append(op)
        return out

    for p in processes:
        p.variants = [expand(v) for v in p.variants]


@dataclass(frozen=True)
class GroupRule:
    """How one kind of asynchronous unit groups its operations: which ops issue, commit a group
    and wait, and where a wait records what it retires."""

    issues: Callable[[object], bool]
    commits: Callable[[object], bool]
    waits: Callable[[object], bool]
    retired_attr: str  # the wait op's field listing what it retires
    wait_closes_group: bool = False  # tcgen05.wait::ld retires everything issued so far


# `cp_async_bulk_wait_group(n)` completes the TMA stores of all but the newest n committed groups.
BULK_STORE_GROUPS = GroupRule(lambda op: isinstance(op, ir.TmaStore), lambda op: isinstance(op, ir.BulkCommit),
                              lambda op: isinstance(op, ir.BulkWait), "done_stores")
CP_ASYNC_GROUPS = GroupRule(lambda op: isinstance(op, ir.CpAsyncCopy), lambda op: isinstance(op, ir.CpAsyncCommit),
                            lambda op: isinstance(op, ir.CpAsyncWait), "done_copies")


def async_read_groups(kind: str) -> GroupRule:
    """wgmma: `warpgroup.wait_group(n)` retires the reads of all but the newest n committed
    groups; tmem_ld: `fence_view_async_tmem_load()` retires every tcgen05.ld issued so far;
    umma: a tcgen05.commit retires every MMA read the warp issued so far."""
    return GroupRule(lambda op: isinstance(op, ir.AsyncRead) and op.kind == kind,
                     lambda op: isinstance(op, ir.AsyncReadCommit) and op.kind == kind,
                     lambda op: isinstance(op, ir.AsyncReadWait) and op.kind == kind,
                     "done_reads", wait_closes_group=kind in ("tmem_ld", "umma"))


def _async_mma_kinds(ops: list) -> tuple:
    """(wgmma, umma) for one warp's raw ops: whether its MMA operand reads are retired by
    warpgroup group waits (it commits or waits wgmma groups), else whether by tcgen05 commits (it
    issues a tcgen05 MMA, or an MMA of unknown kind and a tcgen05 commit). Neither: the reads
    are taken at issue (P12)."""
    wgmma = any(isinstance(op, (ir.AsyncReadCommit, I.RawAsyncReadWait)) and op.kind == "wgmma" for op in ops)
    reads = {op.kind for op in ops if isinstance(op, I.RawAsyncRead)}
    commits = any(isinstance(op, I.RawAsyncReadWait) and op.kind == "umma" for op in ops)
    umma = not wgmma and ("umma" in reads or "mma" in reads and commits)
    return wgmma, umma


def _retire_groups(ops, rule: GroupRule, open_items: list, groups: list):
    """Tell each wait which issued operations it retires: those of all but the newest n committed
    groups, in op order, leaving out a buffer another operation still in flight touches (it is not
    over yet). Returns (open items, groups) after the ops: after a runtime branch, an operation any
    alternative may have issued counts as in flight, and the alternatives' pending groups are
    merged newest first (a wait never retires more than it would on the path taken)."""
    for op in ops:
        if rule.issues(op):
            open_items.append(op)
        elif rule.commits(op):
            groups.append(list(open_items))
            open_items.clear()
        elif rule.waits(op):
            if rule.wait_closes_group:
                groups.append(list(open_items))
                open_items.clear()
            retired = []
            while len(groups) > op.pending:
                retired += groups.pop(0)
            in_flight = {_region_key(x) for g in groups for x in g} | {_region_key(x) for x in open_items}
            setattr(op, rule.retired_attr, [x for x in retired if _region_key(x) not in in_flight])
        elif rule is CP_ASYNC_GROUPS and isinstance(op, ir.MbArrive) and op.cp_async:
            # cp.async.mbarrier.arrive.noinc fires once every earlier copy of the arriving threads
            # has landed (committed or not); it leaves the groups as they are. Only copies issued
            # by arriving lanes alone are published (the copy agent's bit is per warp).
            op.done_copies = [x for x in _union(groups + [open_items]) if x.lanes & ~op.lanes == 0]
        elif isinstance(op, ir.Choice):
            results = [_retire_groups(alt, rule, list(open_items), [list(g) for g in groups])
                       for alt in op.alternatives]
            open_items[:] = _union([o for o, _ in results])
            # Pending groups line up from the newest: a later wait(n) keeps the newest n groups of
            # every alternative pending. An alternative with fewer groups (it committed fewer, or
            # its own wait retired its oldest) simply has nothing at the older positions; an
            # operation pending in a newer group of any alternative is never retired with an
            # older one (the in-flight test above).
            longest = max(len(g) for _, g in results)
            merged = [_union([g[len(g) - longest + i] for _, g in results if len(g) - longest + i >= 0])
                      for i in range(longest)]
            groups[:] = merged
    return open_items, groups


MAX_TAIL_SPLITS = 8  # uniform choices per configuration whose continuation is duplicated
GROUP_COMMITS = (ir.CpAsyncCommit, ir.BulkCommit, ir.AsyncReadCommit)
GROUP_WAITS = (ir.CpAsyncWait, ir.BulkWait, ir.AsyncReadWait)


def _split_group_tails(ops: list, fixed: dict, budget: list) -> list:
    """Which groups a `wait_group(n)` retires depends on the path that led to it. After a choice
    whose sides commit different groups, `_retire_groups` lines the sides' groups up and
    merges them, which over-approximates what is pending on either side. For a CTA-uniform
    choice (`shared`) every later choice on the same value takes the same side, so the
    continuation is duplicated into each side (with those later choices decided): each copy of
    the later waits then sees exactly its own side's groups. At most `budget` such splits."""
    out: list = []
    for i, op in enumerate(ops):
        if isinstance(op, ir.Choice) and op.shared is not None and op.shared in fixed:
            # Decided on this path: the side this value takes, inline.
            out += _split_group_tails(op.alternatives[fixed[op.shared]], fixed, budget)
            continue
        if isinstance(op, ir.Choice):
            rest = ops[i + 1:]
            if (op.shared is not None and budget[0] > 0 and any(isinstance(x, GROUP_COMMITS) for x in ir.walk(
                    [x for alt in op.alternatives for x in alt])) and any(isinstance(x, GROUP_WAITS)
                                                                           for x in ir.walk(rest))):
                budget[0] -= 1
                alts = [_split_group_tails(alt + _copy_ops(rest), {**fixed, op.shared: k}, budget)
                        for k, alt in enumerate(op.alternatives)]
                out.append(replace(op, alternatives=alts))
                return out
            op.alternatives = [_split_group_tails(alt, fixed, budget) for alt in op.alternatives]
        out.append(op)
    return out


def _copy_ops(ops: list) -> list:
    """Fresh op objects (group bookkeeping records which ops a wait retires, per object)."""
    out = []
    for op in ops:
        if isinstance(op, ir.Choice):
            out.append(replace(op, alternatives=[_copy_ops(a) for a in op.alternatives]))
        elif isinstance(op, ir.GuardedBlock):
            out.append(replace(op, then=_copy_ops(op.then), otherwise=_copy_ops(op.otherwise)))
        else:
            out.append(replace(op))
    return out


def _region_key(op):
    """The buffer an asynchronous operation touches (a TMA store of an unknown tile: its own key)."""
    return op.region.index if op.region is not None else ("op", id(op))


def _union(lists) -> list:
    out, seen = [], set()
    for lst in lists:
        for x in lst:
            if id(x) not in seen:
                seen.add(id(x))
                out.append(x)
    return out


def _trip_configs(discovered: dict, bound: int, max_configs: int, multiples: Optional[dict] = None) -> list:
    """Trip-count configurations: the full product when it is small, else the diagonal (every
    runtime loop takes the same trip count t, for each t in 1..bound). A bound that another loop
    divides by m (`multiples`) takes t rounded up to a multiple of m."""
    syms = list(discovered)
    if not syms:
        return [ir.TripConfig({})]
    multiples = multiples or {}

    def trips(s, t: int) -> int:
        m = multiples.get(s, 1)
        return -(-t // m) * m

    values = list(range(1, bound + 1))
    per_sym = [sorted({trips(s, t) for t in values}) for s in syms]
    n = 1
    for v in per_sym:
        n *= len(v)
    if n <= max(max_configs, 1):
        return [ir.TripConfig(dict(zip(syms, combo))) for combo in itertools.product(*per_sym)]
    return [ir.TripConfig({s: trips(s, t) for s in syms}) for t in values]


BLOCK_SEARCH_WARPS = 32  # the most warps a CTA has (1024 threads)
BLOCK_SEARCH_QUIET = 8  # warps in a row that reach no new branch side before the search stops


def _warps_reaching_every_branch(info: ModuleInfo, site: KernelSite, env: KernelEnv, methods: dict,
                                 settings: Settings) -> int:
    """A block size that does not fold is chosen from the kernel's own dispatch: interpret warp
    0, 1, 2, ... of a full-size CTA and keep the fewest whole warp groups (4 warps) after which
    no warp reaches a branch side (`if warp_idx == 4:`, the `else` of `if is_dma_warp_group:`)
    that an earlier warp did not. A fixed guess instead drops roles (a 128-thread guess for a
    producer warp group plus two consumer warp groups has no consumers: a false deadlock). A
    named barrier of N threads raises it to N threads. The search stops after BLOCK_SEARCH_QUIET
    warps in a row add nothing; it uses a scratch registry,
    so its warps leave no assumptions or unmodeled items behind."""
    scratch = I.Registry(env.stages, _stage_counts(env.self_obj, env.params), env.host_facts)
    seen: set = set()
    needed, quiet = 1, 0
    threads = 32 * BLOCK_SEARCH_WARPS
    bound = env.loop_bound or DEFAULT_LOOP_BOUND
    for w in range(BLOCK_SEARCH_WARPS):
        ctx = I.WarpContext(0, w, 1, 1, threads, {}, bound, {}, block_dims=env.block_dims,
                            block_shape_unknown=env.block_shape_unknown)
        self_copy = _kernel_self(env.self_obj)
        it = I.KernelInterp(info, ctx, self_copy, methods, dict(env.params), scratch)
        try:
            it.run_body(site.node)
        except (I.Unsupported, RecursionError):
            pass  # the real run reports it; the sides reached so far still count
        new = it.branch_sides - seen
        # A named barrier of N threads needs at least N threads in the CTA (cudnn's SM120 SDPA
        # backward syncs 288 threads while its dispatch only tells warps 0-3 apart).
        widest = max([op.threads for op in ir.walk(it.out) if isinstance(op, ir.NamedBarrier)
                      and isinstance(op.threads, int) and 0 < op.threads <= threads] + [0])
        if widest > 32 * needed:
            needed, quiet = -(-widest // 32), 0
        if new:
            seen |= new
            needed, quiet = max(needed, w + 1), 0
        else:
            quiet += 1
            if quiet >= BLOCK_SEARCH_QUIET and w % 4 == 3 and w + 1 >= needed:
                break
    return -(-needed // 4) * 4


MAX_SPLIT_CONFIGS = 32  # configurations (trip counts x fixed uniform conditions) per kernel
MAX_SPLIT_ROUNDS = 3  # re-interpretations to find uniform conditions nested in fixed ones


def _entry_decided(key, registry) -> bool:
    key = I._truth(key)
    return key in registry.entry_terms or I._negate(key) in registry.entry_terms


def _split_dimensions(used: list, c: ir.TripConfig, registry, bound: int) -> list:
    """The ways the fixed conditions `used` can hold together in base configuration `c`: a list
    of dimensions, each a list of {condition: value} choices. A condition on its own is a
    dimension of True and False. Conditions that compare one uniform value with constants
    (`subtile == self.release_at` in every trip of a loop, `mode == 1`, `mode in (2, 3)`) form one
    dimension over the value instead: each constant named, and one value none of them is (P14:
    one value per CTA; the conditions never contradict each other). A value compared with the
    index of a runtime loop is taken to be one of the loop's indices in this configuration, and
    one compared with a warp's index (`warp == num_compute_warps`) the index of one of the warps
    that compare it (both stated by the caller), so there is no "none of them"."""
    groups: dict = {}
    dims = []
    for k in used:
        parts = I.enum_parts(k[1])
        if parts is None:
            dims.append([{k: True}, {k: False}])
        else:
            groups.setdefault((k[0], parts[0]), []).append((k, parts[1], parts[2]))
    for gk, members in groups.items():
        named = {v for _, consts, _ in members for v in consts}
        ordered = any(isinstance(rel, str) for _, _, rel in members)
        loop = registry.index_terms.get(gk)
        if loop is not None:
            values = list(range(c.trips.get(loop, bound)))
        elif gk in registry.warp_terms and not ordered:
            values = sorted(named)
        else:
            values, closed = _enum_domain(named, ordered)
            values = list(values) + ([] if closed else [_OTHER])
        choices = [{k: I.enum_holds(v, consts, rel) for k, consts, rel in members} for v in values]
        # Values on which every condition agrees (two values of one gap) are one configuration.
        dims.append([c for i, c in enumerate(choices) if c not in choices[:i]])
    return dims


_OTHER = object()  # a value of a uniform term that none of the compared constants is


def _enum_domain(constants, ordered: bool) -> tuple:
    """(values, closed) of a uniform value compared with `constants`: with an order comparison
    among them, the values that cover every gap (I.enum_domain); else the constants and, not
    closed, any other value."""
    if ordered:
        values, closed = I.enum_domain(constants)
        if closed:
            return values, True
    return tuple(sorted(constants, key=repr)), False


def _dimensions_size(dims: list) -> int:
    n = 1
    for d in dims:
        n *= len(d)
    return n


def _trips_text(c) -> str:
    counts = set(c.trips.values())
    return f"all {counts.pop()}" if len(counts) == 1 and len(c.trips) > 1 else \
        ", ".join(f"`{k}` = {v}" for k, v in c.trips.items()) or "none"


def _raised_at_a_trip_count(e: Exception, registry) -> bool:
    """A `raise` reached while tracing after a compile-time condition took a loop bound's value
    from the configuration's trip count (`KernelInterp.bound_value`): the model's small trip
    count may be one the kernel's own check rejects (cuDNN's sm80 prefill: `N // 8` MMA fragments
    must be even, with `N` the bound of a loop over them)."""
    return isinstance(e, I._Raises) and bool(registry.const_bounds)


def _first_run(run_all, discovered: dict, ctas: int, bound: int, registry):
    """The discovery run (every runtime loop at the bound) and the trip counts it took. If the
    trace raises there after a compile-time condition took a loop bound's value, smaller counts
    of those bounds are tried, so that the loops are still found; the last try records the
    failure as unmodeled."""
    found_with = min(bound, DISCOVERY_TRIPS)
    tries = [None] + [t for t in range(bound, 0, -1) if t != found_with]
    i = 0
    while i < len(tries):
        t = tries[i]
        before = dict(registry.unmodeled)
        trips = {} if t is None else {text: t for text in registry.const_bounds}
        try:
            first = run_all(trips, discovered, ctas, strict=i < len(tries) - 1, discovering=True)
        except I.NotCompiled:
            registry.unmodeled.clear()
            registry.unmodeled.update(before)
            if t is None or registry.const_bounds <= set(trips):
                i += 1  # else the same count again, for the bounds this try met first
            continue
        if t is not None:
            counted = f"{found_with} trip" + ("s" if found_with != 1 else "")
            registry.assume(f"the kernel's trace raises when the runtime loop bound "
                            f"{', '.join(f'`{x}`' for x in sorted(trips))} takes {counted} (a compile-time "
                            f"check on it): the loops were found with {t}")
        return first, trips
    raise I.Unsupported("no trip count traces")  # not reached: the last try records the failure


def _reuse_discovery(first, discovered: dict, registry, run_warps) -> list:
    """The configuration of the discovery run's trip counts, from that run: each warp's own run,
    unless it read a loop bound before the loop was met (the configuration knows its value from
    the start), which is run again (`run_warps(pairs)`)."""
    redo = {(cta, w) for cta, w, it in first
            if it.early_reads & set(discovered) or it.early_keys & set(registry.bound_terms)}
    fresh = {(cta, w): it for cta, w, it in run_warps(redo)} if redo else {}
    return [(cta, w, fresh.get((cta, w), it)) for cta, w, it in first]


def _compiled_configs(configs, run_config, registry):
    """Run each configuration, leaving out those the DSL could not trace (NotCompiled: e.g.
    `FP8` false with `NVFP4` true, where a pipeline the kernel only builds for FP8 is None): no
    kernel is compiled for them. Each one left out is stated; when none traces, the first
    failure is unmodeled."""
    kept, runs, failures = [], [], []
    for c in configs:
        before = dict(registry.unmodeled)
        try:
            runs.append(run_config(c))
            kept.append(c)
        except I.NotCompiled as e:
            registry.unmodeled.clear()
            registry.unmodeled.update(before)
            failures.append((c, e))
    for labels in dict.fromkeys(c.cond_labels for c, _ in failures):
        dropped = [(c, e) for c, e in failures if c.cond_labels == labels]
        trips = "every trip count" if len(dropped) == sum(c.cond_labels == labels for c in configs) else \
            "trip counts " + "; ".join(_trips_text(c) for c, _ in dropped)
        why = dropped[0][1]
        registry.assume(f"configuration {'; '.join(labels) or 'without fixed conditions'} with {trips} not "
                        f"checked: {why} there, " + ("on every path of it (an error, no hang and no race)"
                                                     if isinstance(why, I._Traps) else
                                                     "so the DSL trace fails and no kernel is compiled for it"))
    if not kept:
        raise I.Unsupported(f"no configuration traces: {failures[0][1]}")
    return kept, runs


def _kernel_self(host_self: Optional[SelfObj]) -> Optional[SelfObj]:
    """The kernel's copy of the object the host built. What the host set and the interpreter did
    not fold (`self.num_ctas = 2 if use_2cta else 1` on an argument) is still one trace-time
    value for every thread of the launch: an unknown named by its attribute, so that conditions
    on it are CTA-uniform and each of their values can be a configuration (P14)."""
    if host_self is None:
        return None
    attrs = {k: replace(v, key=I._leaf("self", k)) if type(v) is Unknown and v.key is None else v
             for k, v in host_self.attrs.items()}
    return SelfObj(attrs)


def _condition_label(k, value, site, registry) -> list:
    """How a configuration shows its value of fixed condition `k`: "`has_x` (line 12) = True";
    a role dispatch on a uniform value (`warp == wn`) by the one warp it holds in, not by one
    True and several False."""
    line, text = site[:2]
    cta = f"CTA {k[0]}: " if k[0] else ""
    parts = I.enum_parts(k[1])
    if parts is not None and (k[0], parts[0]) in registry.warp_terms and parts[2] is True and len(parts[1]) == 1:
        return [f"{cta}`{text}` (line {line}) in warp {next(iter(parts[1]))}"] if value else []
    if len(site) > 2 and site[2] and isinstance(value, bool):
        value = not value  # the term is the source condition's negation (`if not c`, `x is not None`)
    return [f"{cta}`{text}` (line {line}) = {value}"]


def _split_uniform_conditions(configs, runs, splits, registry, unmodeled0, run_config, bound):
    """CTA-uniform runtime conditions whose sides advance a pipeline state differently (`if
    has_x: state.advance()`, `if block_count > 0: <loop advancing the state>`): after such a
    branch the state is not known, so instead each value of the condition becomes a
    configuration of its own, interpreted separately like a trip count, in which the branch runs
    like a folded one. The model chooses one configuration for the whole launch, so every warp
    of the CTA sees the same value (policy P14: a uniform term has one value per CTA); the
    configurations together cover every value (`_split_dimensions`). Conditions found while
    interpreting a fixed one's side are added in later rounds; those past MAX_SPLIT_CONFIGS stay
    unknown (their states' uses are unmodeled)."""
    used: list = []
    base = configs
    good = (configs, runs, dict(registry.unmodeled), [])  # the last complete set of runs

    def total(keys) -> int:
        return sum(_dimensions_size(_split_dimensions(keys, c, registry, bound)) for c in base)

    for _ in range(MAX_SPLIT_ROUNDS):
        # A loop's entry test found later in the same run is decided, not a configuration.
        new = [k for k in splits if k not in used and not _entry_decided(k[1], registry)]
        take = []
        while new and total(used + take + new[:1]) <= MAX_SPLIT_CONFIGS:
            take.append(new.pop(0))
        if not take:
            break
        used += take
        configs = []
        for c in base:
            for choice in itertools.product(*_split_dimensions(used, c, registry, bound)):
                conds = dict(c.conds)
                labels = list(c.cond_labels)
                for part in choice:
                    conds.update(part)
                for k in used:
                    labels += _condition_label(k, conds[k], splits[k], registry)
                configs.append(ir.TripConfig(dict(c.trips), conds, tuple(labels)))
        # The earlier runs' uses of the states these branches left unknown are not unmodeled.
        registry.unmodeled.clear()
        registry.unmodeled.update(unmodeled0)
        try:
            # The interpretation budget (MAX_KERNEL_STEPS) goes on counting from the runs before:
            # splitting must not make the front end much slower than leaving the states unknown.
            configs, runs = _compiled_configs(configs, run_config, registry)
        except I.Unsupported:
            # Past the budget: the last complete runs, with the other states unknown after their
            # branches (their uses stay unmodeled).
            registry.unmodeled.clear()
            registry.unmodeled.update(good[2])
            registry.splits_left = True
            cut = ", ".join(f"`{splits[k][1]}` (line {splits[k][0]})" for k in take)
            registry.assume(f"past the interpretation budget ({I.MAX_KERNEL_STEPS} steps) the runtime "
                            f"condition{'s' if len(take) > 1 else ''} {cut} could not be checked as configurations "
                            f"of their own: what their branches leave unknown stays unknown")
            break
        good = (configs, runs, dict(registry.unmodeled), list(used))
    configs, runs, _, used = good
    for k in used:
        line, text = splits[k][:2]
        registry.assume(f"the runtime condition `{text}` (line {line}) is the same for every thread of the CTA "
                        f"(P14): its sides advance a pipeline state differently, it selects a buffer index or it decides "
                        f"which warps use a named barrier, "
                        f"so each value is checked as a configuration of its own")
    for (cta, term), loop in registry.index_terms.items():
        if any(k[0] == cta and (I.enum_parts(k[1]) or (None,))[0] == term for k in used):
            registry.assume(f"a uniform value compared with the index of the runtime loop over `{loop}` is one of "
                            f"the loop's indices (a value past the loop would skip the branch in every trip)")
    for (cta, term), warps in registry.warp_terms.items():
        if any(k[0] == cta and (I.enum_parts(k[1]) or (None,))[0] == term for k in used):
            registry.assume(f"a uniform value compared with the warp index (warps {sorted(warps)}) is the index "
                            f"of one of those warps: the block holds the warp of every role it dispatches")
    return configs, runs


def build_kernel(info: ModuleInfo, site: KernelSite, path: str, settings: Settings,
                 compact: bool = False) -> ir.KernelModel:
    env = kernel_env(info, site, settings)
    methods = class_methods(site.cls)
    registry = I.Registry(env.stages, _stage_counts(env.self_obj, env.params), env.host_facts, compact=compact)
    registry.host_sites = {key: where for (_, key), where in env.host_sites.items()}
    registry.assume("memory-model policies: " + ("strict" if settings.strict else "default (CUTLASS-compatible)"))
    for a in env.assumptions:
        registry.assume(a)
    def_span = info.span(site.node.name)
    threads = env.threads
    if threads is not None and threads < 1:
        registry.add_unmodeled(ir.Unmodeled(def_span.line, "block size", f"{threads} threads per CTA"))
        threads = 32
    if threads is None:
        threads = 32 * _warps_reaching_every_branch(info, site, env, methods, settings)
        solved, threads = _block_argument_for(env.block_argument, threads)
        registry.assume(f"block size not foldable: taken to be {threads} threads, the fewest whole warp groups "
                        f"whose warps reach every warp-dependent branch"
                        + (" and that the launch's block expression makes" if solved is not None else "")
                        + " (pin it with `# cutespin: block=N`)")
        if solved is not None:
            # The launch's block is computed from one constructor argument: the value that gives
            # the model's block size, with everything else the constructor derives from it
            # (the producer warp's index, a named barrier's thread count) folded alike.
            name = env.block_argument[0]
            env = kernel_env(info, replace(site, pins={**site.pins, name: solved}), settings)
            for a in env.assumptions:
                if not a.startswith((f"self.{name} = {solved} (pinned)", f"{name} = {solved} (pinned)")):
                    registry.assume(a)
            registry.assume(f"host argument {name} = {solved}: the launch's block is computed from it, and "
                            f"{solved} gives the {threads} threads taken (pin `{name}` to check another value)")
        elif env.block_tie is not None and threads % env.block_tie[1] == 0:
            # The launch says block = self.n * k threads; the model's block fixes self.n.
            name, k = env.block_tie
            env.self_obj.attrs[name] = threads // k
            registry.assume(f"self.{name} = {threads // k}: the launch's block is `self.{name}"
                            + (f" * {k}`" if k != 1 else "`") + f" threads and the block is taken to be {threads}")
    warps = max(1, (threads + 31) // 32)
    if warps > 32:
        registry.add_unmodeled(ir.Unmodeled(def_span.line, "block size", f"{threads} threads per CTA"))
        warps = 32
    bound = env.loop_bound or (2 * env.stages + 1 if env.stages else DEFAULT_LOOP_BOUND)
    if env.loop_bound is None and MAX_DEFAULT_LOOP_BOUND < bound <= I.MAX_UNROLL:
        registry.assume(f"runtime loops are checked up to {MAX_DEFAULT_LOOP_BOUND} trips, not 2 x {env.stages} stages "
                        f"+ 1 = {bound}: the ring does not wrap twice (pin `loop` to check more trips)")
        bound = MAX_DEFAULT_LOOP_BOUND
    cluster = env.cluster
    ctas = cluster
    if ctas > settings.max_ctas:
        registry.add_unmodeled(ir.Unmodeled(def_span.line, "cluster size",
                                            f"cluster of {ctas} CTAs is larger than the modeled maximum {settings.max_ctas}"))
        ctas = cluster = settings.max_ctas
    if bound > I.MAX_UNROLL:  # e.g. `self.stages = 10**9`: no trip count list of that length is built
        registry.add_unmodeled(ir.Unmodeled(def_span.line, "loop bound", f"runtime loops would take up to {bound} "
                                            f"trips; at most {I.MAX_UNROLL} are unrolled (pin a smaller loop bound)"))
        return _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound)

    splits: dict = {}  # uniform conditions whose sides advance a pipeline state differently

    late: dict = {}  # runtime loops the discovery run did not meet (a loop's later trips reach them)

    def run_all(trips, discovered, ctas_now, conds=None, strict=False, discovering=False, only=None):
        """Every warp of every CTA in one configuration. `strict`: a trace that raises after a
        compile-time condition took a loop bound's trip count (`_raised_at_a_trip_count`) is
        raised, so that the caller can leave the configuration out. `discovering`: the discovery
        run, every runtime loop at DISCOVERY_TRIPS trips, filling `discovered`; in the other
        runs a loop it did not meet goes into `late`. `only`: just these (CTA, warp) pairs."""
        met: dict = discovered if discovering else {}
        procs = []
        for cta in range(ctas_now):
            for w in range(warps):
                if only is not None and (cta, w) not in only:
                    continue
                ctx = I.WarpContext(cta, w, cluster, ctas_now, threads, trips,
                                    min(bound, DISCOVERY_TRIPS) if discovering else bound, met,
                                    dict(conds or {}), splits, env.block_dims, env.block_shape_unknown, discovering)
                self_copy = _kernel_self(env.self_obj)
                it = I.KernelInterp(info, ctx, self_copy, methods, dict(env.params), registry)
                try:
                    it.run_body(site.node)
                except I.NotCompiled as e:
                    if conds or strict and _raised_at_a_trip_count(e, registry):
                        raise  # this configuration is not compiled (_split_uniform_conditions)
                    registry.add_unmodeled(ir.Unmodeled(def_span.line, "kernel body", _not_compiled_text(e)))
                except I.Unsupported as e:
                    registry.add_unmodeled(ir.Unmodeled(def_span.line, "kernel body", str(e)))
                    if e.whole_kernel:
                        raise
                except RecursionError:
                    registry.add_unmodeled(ir.Unmodeled(def_span.line, "kernel body", "nesting too deep"))
                procs.append((cta, w, it))
        for text, line in met.items():
            if not discovering and text not in found_loops:
                late.setdefault(text, line)
        return procs

    discovered: dict = {}
    found_loops = discovered  # what run_all compares a later run's loops with
    unmodeled0 = dict(registry.unmodeled)
    steps0 = registry.steps
    try:
        first, first_trips = _first_run(run_all, discovered, ctas, bound, registry)
    except I.Unsupported:
        return _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound,
                          splits)
    written = _written_gmem(first) | registry.atomic_gmem
    if written & registry.input_loads:
        # A tensor the kernel writes is not an input: its loads may differ between warps.
        registry.written_gmem |= written
        registry.shared.clear()
        registry.enum_terms.clear()
        registry.enum_values.clear()
        registry.enum_ordered.clear()
        registry.shared_sites.clear()
        try:
            first = run_all(first_trips, discovered, ctas, discovering=True)
        except I.Unsupported:
            return _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound,
                              splits)
    if registry.early_word_loads & registry.tmem_holders:
        # A warp loaded the TMEM address from its shared-memory word before the allocating warp was
        # interpreted (`loaded_word`): run again, now that the word is known. The whole-TMEM
        # assumption those loads made is made again only if a raw address is still untraced.
        registry.early_word_loads.clear()
        registry.steps = steps0  # the run it replaces does not count against the interpretation budget
        if TMEM_RAW in registry.assumptions:
            registry.assumptions.remove(TMEM_RAW)
        registry.unmodeled.clear()
        registry.unmodeled.update(unmodeled0)
        try:
            first = run_all(first_trips, discovered, ctas, discovering=True)
        except I.Unsupported:
            return _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound,
                              splits)
    uses_flags = any(isinstance(op, (I.RawFlagWait, I.RawFlagUpdate)) for _, _, it in first for op in ir.walk(it.out))
    if uses_flags and ctas == cluster:
        want = env.grid if env.grid else 2
        want = min(max(want, cluster), settings.max_ctas)
        if want != ctas:
            ctas = want
            try:
                first = run_all(first_trips, discovered, ctas, discovering=True)
            except I.Unsupported:  # the interpretation budget, now over more CTAs
                return _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound,
                                  splits)
        registry.assume("CTAs that spin on a GMEM flag written by another CTA are co-resident")
        registry.assume(f"{ctas} CTAs modeled for the GMEM flag protocol")
    multiples = {s: m for s, m in registry.multiples.items() if s in discovered}
    configs = _trip_configs(discovered, bound, settings.max_configs, multiples)
    for s, m in multiples.items():
        line, text = registry.multiple_sites[s]
        registry.assume(f"runtime loop bound `{s}` is taken to be a multiple of {m}: the loop at line {line} runs "
                        f"over `{text}`")
    product = 1
    for text in discovered:
        product *= len({c.trips.get(text) for c in configs})
    diagonal = len(discovered) > 1 and len(configs) < product
    for text, line in discovered.items():
        registry.assume(f"runtime loop bound `{text}` (line {line}) takes every trip count in "
                        f"{sorted({t for c in configs for t in [c.trips.get(text)] if t})}")
    if diagonal:
        registry.assume(f"the {len(discovered)} runtime loop bounds take the same trip count together "
                        f"(not every combination; raise max-configs to check more)")
    try:
        decided = [k for k in splits if _entry_decided(k[1], registry)]
        # The same for a loop whose start has no term (`lo < hi` before `range(lo, hi)`).
        entry_met_early = bool(registry.early_entry_texts & set(registry.entry_texts))
        if decided or entry_met_early:
            # The first run met a loop's entry test before the loop that decides it (P9): what it
            # left unknown there is known in runs from here on.
            registry.unmodeled.clear()
            registry.unmodeled.update(unmodeled0)
            for k in decided:
                del splits[k]
        if configs == [ir.TripConfig({})] and not decided:
            runs = [first]
        elif registry.const_bounds:
            # A compile-time check on a loop bound (`N // 8` fragments must be even) fails at some
            # trip counts: no kernel is compiled with those, and their configurations are left out.
            try:
                configs, runs = _compiled_configs(configs, lambda c: run_all(c.trips, {}, ctas, strict=True),
                                                  registry)
            except I.Unsupported as e:
                if not e.whole_kernel:  # no trip count traces (a budget is recorded by run_all)
                    registry.add_unmodeled(ir.Unmodeled(def_span.line, "kernel body", _not_compiled_text(e)))
                raise
        else:
            # The discovery run is the configuration of DISCOVERY_TRIPS trips when it read no
            # loop bound before meeting its loop (P9): that configuration is not run again.
            at_discovery = {text: min(bound, DISCOVERY_TRIPS) for text in discovered}
            reuse = not first_trips and not decided and not entry_met_early
            runs = [_reuse_discovery(first, discovered, registry, lambda only: run_all(c.trips, {}, ctas, only=only))
                    if reuse and c.trips == at_discovery and not c.conds else run_all(c.trips, {}, ctas)
                    for c in configs]
        configs, runs = _split_uniform_conditions(configs, runs, splits, registry, unmodeled0,
                                                  lambda c: run_all(c.trips, {}, ctas, c.conds), bound)
    except I.Unsupported:
        return _abandoned(info, site, path, def_span, ctas, cluster, warps, registry, settings, env, bound,
                          splits)

    for text, line in late.items():
        # Reached only past the first trip of another loop (`if k > 0:` around it): every
        # configuration runs it at the bound; its own trip count is not varied.
        registry.assume(f"runtime loop bound `{text}` (line {line}) is met only past the first trip of an enclosing "
                        f"loop: it takes {bound} trips in every configuration")
    for run in runs:
        mark_dead_paths(run)
        unstage_mixed_schemes(run)
        split_stages(run)
        merge_tma_batches(run, registry)
        split_blocks(run)
        split_gmem_elements(run, registry)
        split_gmem_slices(run, registry)
    numbering = _Numbering()
    processes = []
    for idx in range(ctas * warps):
        cta, w, _ = runs[0][idx]
        its = [run[idx][2] for run in runs]
        masks: set = set()
        elected: set = set()
        for it in its:
            _collect_masks(it.out, masks)
            elected |= it.elected_lanes
        classes = lane_partition(masks or {FULL_MASK}, elected)
        conv = _Converter(numbering, classes, registry)
        conv.wgmma, conv.umma = _async_mma_kinds([op for it in its for op in ir.walk(it.out)])
        variants = [conv.convert(it.out) for it in its]
        if not any(variants):
            continue
        hint = next((it.role_hint for it in its if it.role_hint), None)
        role = f"warp {w}" + (f" ({hint})" if hint else "")
        if ctas > 1:
            role = f"CTA {cta} " + role
        processes.append(ir.Process(cta, w, role, classes, variants))

    _mark_merged_selections(numbering)
    _settle_data_atomics(processes, registry)
    _settle_untracked_gmem(processes, registry)
    _resolve_tmem(processes, numbering)
    derive_arrival_counts(processes, numbering.derived)
    derive_named_barrier_threads(processes)
    _assign_tx_units(processes, registry)
    for p in processes:
        p.variants = [_split_group_tails(ops, {}, [MAX_TAIL_SPLITS]) for ops in p.variants]
        for ops in p.variants:
            _retire_groups(ops, BULK_STORE_GROUPS, [], [])
            _retire_groups(ops, CP_ASYNC_GROUPS, [], [])
            for kind in ("wgmma", "tmem_ld", "umma"):
                _retire_groups(ops, async_read_groups(kind), [], [])
    bounds = {"loop": bound if discovered else None, "stages": env.stages, "cluster": cluster}
    if env.stages is None and discovered:
        registry.assume(f"no stage count found: runtime loops bounded by {bound}")
    deps = _package_notes(info, registry)
    data_bounds = _data_bounds(registry)
    return ir.KernelModel(
        name=site.name, qualname=site.qualname, path=path, line=def_span.line, def_span=def_span,
        ctas=ctas, cluster_size=cluster, warps=warps, processes=processes,
        barriers=sorted(numbering.barriers.values(), key=lambda b: b.index),
        regions=sorted(numbering.regions.values(), key=lambda r: r.index),
        flags=sorted(numbering.flags.values(), key=lambda f: f.index),
        configs=configs, assumptions=list(registry.assumptions),
        unmodeled=sorted(registry.unmodeled.values(), key=lambda u: (u.path, u.line, u.construct)),
        bounds=bounds, static_findings=list(registry.statics), strict=settings.strict, deps=deps,
        shared_conditions=list(registry.shared_sites), loop_chosen=env.loop_bound is not None,
        splits_left=registry.splits_left,
        data_bounds=data_bounds, **_enum_tables(processes, registry),
    )


def _data_bounds(registry) -> list:
    """(text, line) of the `while` bounds some warps compute as a uniform term and others do not
    (they read it as data), each stated."""
    found = []
    for text, sources in registry.bound_sources.items():
        if True in sources and False in sources:
            found.append((text, sources[False]))
            registry.assume(f"the loop `while {text}` is bounded by a value some warps compute (line "
                            f"{sources[True]}) and others read as data (line {sources[False]}; e.g. a tile another "
                            f"warp wrote to shared memory): one trip count is taken for both, which may pair counts "
                            f"no launch has (a writer that hands over one more tile than its loop runs), so a "
                            f"deadlock found with it is only possible")
    return found


def _enum_tables(processes: list, registry) -> dict:
    """`enum_values` / `enum_closed` of the model. A value compared only by one order comparison
    (`n > 0` and nothing else) needs no number of its own: its branches go back to a plain
    uniform condition, chosen lazily where first needed (P14), and the other numbers close up."""
    # Variants may share op objects: each is renumbered once.
    choices = list({id(op): op for p in processes for ops in p.variants for op in ir.walk(ops)
                    if isinstance(op, ir.Choice) and op.enum is not None}.values())
    uses: dict = {}
    for op in choices:
        uses.setdefault(op.enum[0], set()).add((op.enum[1], op.enum[2]))
    lone = {m for m, u in uses.items() if len(u) == 1 and isinstance(next(iter(u))[1], str)}
    kept = [m for m in range(len(registry.enum_values)) if m not in lone]
    renumber = {m: i for i, m in enumerate(kept)}
    for op in choices:
        m = op.enum[0]
        op.enum = None if m in lone else (renumber[m],) + tuple(op.enum[1:])
    domains = [_enum_domain(registry.enum_values[m], registry.enum_ordered[m]) for m in kept]
    return {"enum_values": [d[0] for d in domains], "enum_closed": [d[1] for d in domains]}

