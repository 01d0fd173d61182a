"""The analyzed file's package: where its imports lead, statically.

A kernel often calls `@cute.jit` helpers and pipeline subclasses defined in other modules of its
package. `Project` finds the package root (walking up while `__init__.py` exists), turns an
absolute dotted name (`quack.utils.fill_oob`, the front end has already made relative imports
absolute) into the function, class or module it names, and parses those sibling modules with
libcst on demand. Nothing is imported or executed.

Parsed modules are cached per (path, mtime, size) across checks so the language server stays
fast; a check follows at most `max_modules` modules of at most MAX_MODULE_CHARS each, and says so
(an unmodeled item) when a cap stops it. Import cycles cannot loop: a module is parsed once per
check, and re-exports are followed with a visited set.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import libcst as cst

from .discover import ModuleInfo, discover, is_property_accessor, qualify
from .values import ClassRef, FuncRef

MAX_MODULES = 48  # sibling modules one check may parse
MAX_MODULE_CHARS = 256 * 1024  # larger sibling modules are not followed
MAX_NAMESPACE_LEVELS = 2  # folders above the package root searched for namespace packages
LIBRARY_PIPELINE_PREFIXES = ("cutlass.pipeline.", "cutlass.utils.pipeline.")
# Top-level packages of the DSL and its runtime: modeled by name, never by their sources (which an
# extra path, a site-packages folder, also holds).
LIBRARY_PACKAGES = ("cutlass", "cute", "cuda")


def package_root(path: Path) -> tuple:
    """(root folder, dotted module name) of a Python file: the root holds the outermost folder
    that still has an `__init__.py`; a file outside any package is a top-level module of its own
    folder. A folder without `__init__.py` inside a package is part of it (a PEP 420 portion:
    cuDNN's `block_sparse_attention/csrc/fwd/sm90_blk64/` imports `cudnn._cutlass_compat`)."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while folder.parent != folder and ((folder / "__init__.py").is_file() or folder.name.isidentifier()
                                       and (folder.parent / "__init__.py").is_file()):
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


def package_of(module_name: str, is_init: bool) -> str:
    """The package a module's relative imports start from."""
    if is_init:
        return module_name
    return module_name.rsplit(".", 1)[0] if "." in module_name else ""


class _ModuleCache:
    """Parsed sibling modules, keyed by resolved path; an entry is valid while the file's mtime
    and size are unchanged. Shared by all checks (the language server re-checks often)."""

    def __init__(self, size: int = 128):
        self.size = size
        self.data: OrderedDict = OrderedDict()
        self.lock = threading.Lock()
        self.parses = 0  # for tests: how many times a module was parsed

    def get(self, path: Path, package: str, name: str) -> Optional[ModuleInfo]:
        try:
            st = path.stat()
        except OSError:
            return None
        key = (str(path), package)
        stamp = (st.st_mtime_ns, st.st_size)
        with self.lock:
            hit = self.data.get(key)
            if hit is not None and hit[0] == stamp:
                self.data.move_to_end(key)
                return hit[1]
        if st.st_size > MAX_MODULE_CHARS * 4:
            raise _TooLarge(st.st_size)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        if len(text) > MAX_MODULE_CHARS:
            raise _TooLarge(len(text))
        try:
            info = discover(text, package)
        except Exception:  # noqa: BLE001 - a sibling that does not parse is simply not followed
            return None
        info.path = str(path)
        info.name = name
        info.source_lines = text.splitlines()
        with self.lock:
            self.parses += 1
            self.data[key] = (stamp, info)
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)
        return info


@dataclass(frozen=True)
class ModuleConst:
    """`from .grouped_gemm_kernel import _BAR_EPILOG_SYNC`: a module-level constant of a sibling
    module, evaluated by the interpreter in that module."""

    name: str
    module: ModuleInfo = field(compare=False, hash=False)
    expr: Any = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class LibraryName:
    """A package name that re-exports a library one (`cudnn._cutlass_compat.TmemAllocator`, which
    that module imports from `cutlass.memory`): the interpreter treats it as the library name."""

    qualname: str


def surely_undefined(mod: ModuleInfo, name: str) -> bool:
    """The module's text never spells `name` as a word and nothing in it can create names it does
    not spell (a star import, a module `__getattr__`, `globals()`, `setattr`, `exec`)."""
    text = "\n".join(mod.source_lines) if mod.source_lines else mod.module.code
    if re.search(rf"\b{re.escape(name)}\b", text):
        return False
    return not re.search(r"import\s+\*|def\s+__getattr__|\bglobals\s*\(|\bsetattr\s*\(|\bexec\s*\(|\b__dict__\b", text)


@dataclass(frozen=True)
class UndefinedName:
    """A name a parsed module of the package surely does not define (`utils.fill_oob` where
    `utils` is a sibling module in which `fill_oob` appears nowhere): the DSL's trace of a call
    to it fails with AttributeError, so no kernel is compiled along that path."""

    qualname: str
    module_path: str


@dataclass(frozen=True)
class ClassAttr:
    """`pkg.mod.Cls.attr`: the interpreter decides what it is (a method along the MRO, the
    library's `create`, a class constant)."""

    cls: ClassRef
    attr: str


class _TooLarge(Exception):
    def __init__(self, size: int):
        self.size = size


MODULES = _ModuleCache()


@dataclass
class Project:
    """Import resolution for one check of one file."""

    root: Path
    module_name: str  # the analyzed file's dotted name ("" when it has no file)
    path: str = ""  # the analyzed file
    max_modules: int = MAX_MODULES
    loaded: dict = field(default_factory=dict)  # dotted name -> ModuleInfo or None
    deps: set = field(default_factory=set)  # paths of the sibling modules followed
    limits: list = field(default_factory=list)  # (dotted name, why) when a cap stopped a lookup
    classes: dict = field(default_factory=dict)  # (module path, class name) -> ClassRef
    memo: dict = field(default_factory=dict)  # dotted name -> what `resolve` found

    extra_roots: tuple = ()  # `Settings.extra_paths`: searched after the package's own roots

    @staticmethod
    def for_file(path: str, extra_paths: tuple = ()) -> Optional["Project"]:
        p = Path(path)
        # A file not (or not yet) on disk, an editor's new buffer or a test's source, resolves like
        # one saved there, so that its own module's classes and helpers behave the same.
        if not path or not (p.is_file() or not p.exists() and p.suffix == ".py" and p.resolve().parent.is_dir()):
            return None
        root, name = package_root(p)
        return Project(root, name, str(p.resolve()), max_modules=MAX_MODULES,
                       extra_roots=tuple(Path(x) for x in extra_paths))

    @property
    def package(self) -> str:
        return package_of(self.module_name, Path(self.path).name == "__init__.py")

    # ---------------------------------------------------------------- modules
    def module_file(self, dotted: str) -> Optional[Path]:
        parts = dotted.split(".")
        if not dotted or any(not p.isidentifier() for p in parts):
            return None
        for root in self.search_roots():
            base = root.joinpath(*parts)
            for cand in (base.with_suffix(".py"), base / "__init__.py"):
                if cand.is_file():
                    return cand
        return None

    def search_roots(self) -> list:
        """The root, then folders above it that a namespace package (PEP 420: a top-level folder
        without `__init__.py`, like `flash_attn/` over `flash_attn/cute/`) leads into: an
        ancestor counts when the path from it down to the root is made of identifiers."""
        roots, folder = [self.root], self.root
        for _ in range(MAX_NAMESPACE_LEVELS):
            if not folder.name.isidentifier() or folder.parent == folder:
                break
            folder = folder.parent
            roots.append(folder)
        return roots + [r for r in self.extra_roots if r not in roots]

    def load(self, dotted: str) -> Optional[ModuleInfo]:
        if dotted in self.loaded:
            return self.loaded[dotted]
        f = self.module_file(dotted)
        if f is None:
            self.loaded[dotted] = None
            return None
        if str(f.resolve()) == self.path:
            self.loaded[dotted] = None  # the analyzed file itself: its own ModuleInfo answers
            return None
        if len([m for m in self.loaded.values() if m is not None]) >= self.max_modules:
            self.limits.append((dotted, f"more than {self.max_modules} modules of the package would be followed"))
            self.loaded[dotted] = None
            return None
        self.loaded[dotted] = None  # a cycle back here finds nothing rather than looping
        try:
            info = MODULES.get(f.resolve(), package_of(dotted, f.name == "__init__.py"), dotted)
        except _TooLarge as e:
            self.limits.append((dotted, f"module of {e.size // 1024} KB is larger than the "
                                        f"{MAX_MODULE_CHARS // 1024} KB followed"))
            return None
        if info is not None:
            info.project = None  # cached infos are shared: the interpreter carries the project
            self.deps.add(str(f.resolve()))
        self.loaded[dotted] = info
        return info

    # ---------------------------------------------------------------- names
    def resolve(self, qualname: str, _seen: Optional[set] = None):
        """The FuncRef, ClassRef or ModuleInfo an absolute dotted name denotes within the
        package, or None (a library, or not found)."""
        if _seen is None:
            if qualname not in self.memo:
                self.memo[qualname] = self._resolve(qualname, set())
            return self.memo[qualname]
        return self._resolve(qualname, _seen)

    def _resolve(self, qualname: str, _seen: set):
        if not qualname or qualname.startswith(".") or qualname.split(".")[0] in LIBRARY_PACKAGES:
            return None
        seen = _seen
        if qualname in seen or len(seen) > 32:
            return None
        seen.add(qualname)
        parts = qualname.split(".")
        own = self.module_name.split(".") if self.module_name else []
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            if prefix == self.module_name and own:
                return None  # the analyzed file: its own names are its ModuleInfo's business
            mod = self.load(prefix)
            if mod is not None:
                return self.member(mod, prefix, parts[i:], seen)
        return None

    def member(self, mod: ModuleInfo, mod_name: str, rest: list, seen: set):
        if not rest:
            return mod
        name, tail = rest[0], rest[1:]
        if name in mod.functions and not tail:
            return FuncRef(f"{mod_name}.{name}", mod.functions[name], module=mod)
        if name in mod.classes:
            cref = self.class_ref(mod, name)
            if not tail:
                return cref
            return ClassAttr(cref, tail[0]) if len(tail) == 1 else None
        if name in mod.constants and not tail and name not in mod.aliases:
            return ModuleConst(f"{mod_name}.{name}", mod, mod.constants[name])
        if name in mod.aliases:  # a re-export: `from .pipeline import PipelineTmaAsync` in __init__
            target = ".".join([mod.aliases[name]] + tail)
            if target.split(".")[0] in LIBRARY_PACKAGES:
                return LibraryName(target)
            return self.resolve(target, seen)
        found = self.resolve(".".join([mod_name, name] + tail), seen)  # a submodule
        if found is None and not tail and self.module_file(f"{mod_name}.{name}") is None \
                and surely_undefined(mod, name):
            return UndefinedName(f"{mod_name}.{name}", mod.path)
        return found

    def class_ref(self, mod: ModuleInfo, name: str, _depth: int = 0) -> ClassRef:
        key = (mod.path, name)
        if key in self.classes:
            return self.classes[key]
        node = mod.classes[name]
        placeholder = ClassRef(f"{mod.name}.{name}", node, mod)
        self.classes[key] = placeholder  # `class A(B)` / `class B(A)` across modules: no loop
        bases, library = [], None
        for arg in node.bases:
            b = self.base_of(mod, arg.value, _depth)
            if isinstance(b, str):
                library = library or b
            elif isinstance(b, ClassRef):
                bases.append(b)
                library = library or b.library_base
        ref = ClassRef(f"{mod.name}.{name}", node, mod, tuple(bases), library)
        self.classes[key] = ref
        return ref

    def base_of(self, mod: ModuleInfo, expr, depth: int):
        """A base class expression: a `cutlass.pipeline` class name (str), a package ClassRef, or
        None (anything else: `NamedTuple`, a mixin we cannot see)."""
        if depth > 16:
            return None
        q = qualify(expr, mod.aliases)
        if q is None and isinstance(expr, cst.Name) and expr.value in mod.classes:
            return self.class_ref(mod, expr.value, depth + 1)
        if q is None:
            return None
        if q.startswith(LIBRARY_PIPELINE_PREFIXES):
            return q.rsplit(".", 1)[1]
        target = self.resolve(q)
        return target if isinstance(target, ClassRef) else None

    def find_method(self, cref: ClassRef, name: str):
        """(defining ClassRef, FunctionDef) of `name` along the package classes of the MRO
        (depth-first, left to right, which is the MRO for the hierarchies kernels use)."""
        stack, seen = [cref], set()
        while stack:
            c = stack.pop(0)
            if c.qualname in seen:
                continue
            seen.add(c.qualname)
            for item in c.node.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == name and not is_property_accessor(item):
                    return c, item
            stack = list(c.bases) + stack
        return None


def local_class_ref(project: Optional[Project], info: ModuleInfo, name: str) -> ClassRef:
    """A class of the analyzed file itself, resolved like the package's (its bases may be
    imported from siblings or from `cutlass.pipeline`)."""
    if project is None:
        project = Project(Path("."), "")
        project.max_modules = 0
    return project.class_ref(info, name)
