"""Settings shared by the CLI, the language server and the benchmarks."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Settings:
    loop_bound: Optional[int] = None  # None: 2 x stages + 1 when the kernel has stages, else 3
    timeout: float = 20.0  # seconds per kernel for the whole SPIN pipeline
    depth: int = 100_000  # pan -m
    memory_mb: int = 1024  # pan -DMEMLIM
    max_configs: int = 16  # trip-count configurations per kernel
    max_ctas: int = 4
    strict: bool = False
    spin: str = "spin"
    compiler: Optional[str] = None  # None: tcc when present, else gcc
    verify_fixes: bool = True
    kernel_pins: dict = field(default_factory=dict)  # qualname -> {pin: value}
    # Folders searched, after the analyzed file's own package, for the modules its kernels import
    # (another installed package's helpers: quack's from flash-attn-4). Like pyright's extraPaths.
    extra_paths: tuple = ()

    def with_overrides(self, **kw) -> "Settings":
        kw = {k: v for k, v in kw.items() if v is not None}
        return replace(self, **kw)


PYPROJECT_KEYS = {
    "loop-bound": "loop_bound", "timeout": "timeout", "depth": "depth", "memory-mb": "memory_mb",
    "strict": "strict", "spin": "spin", "compiler": "compiler", "max-configs": "max_configs",
    "verify-fixes": "verify_fixes", "extra-paths": "extra_paths",
}


def find_pyproject(start: Path) -> Optional[Path]:
    start = start.resolve()
    for d in [start] + list(start.parents):
        p = d / "pyproject.toml"
        if p.is_file():
            return p
    return None


def load_pyproject(path: Optional[Path]) -> dict:
    """The `[tool.cutespin]` table of a pyproject.toml (empty when absent or unreadable)."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return data.get("tool", {}).get("cutespin", {}) or {}


def settings_from_pyproject(base: Settings, table: dict, folder: Optional[Path] = None) -> Settings:
    """Raises ValueError, naming the key, for a value of the wrong type or out of range.
    Relative `extra-paths` are relative to `folder` (the pyproject.toml's)."""
    if not isinstance(table, dict):
        raise ValueError("[tool.cutespin] must be a table")
    kw = {}
    for key, attr in PYPROJECT_KEYS.items():
        if key in table:
            kw[attr] = table[key]
        elif attr in table:
            kw[attr] = table[attr]
    for attr, v in kw.items():
        problem = value_problem(attr, v)
        if problem:
            key = next(k for k, a in PYPROJECT_KEYS.items() if a == attr)
            raise ValueError(f"[tool.cutespin] {key} = {v!r}: {problem}")
    if "extra_paths" in kw:
        kw["extra_paths"] = tuple(str((folder or Path.cwd()) / p) for p in kw["extra_paths"])
    kernels = table.get("kernels") or {}
    if not isinstance(kernels, dict):
        raise ValueError("[tool.cutespin] kernels must be a table of kernel tables")
    pins = {}
    for qualname, values in kernels.items():
        if isinstance(values, dict):
            pins[qualname] = {k.replace("-", "_"): (tuple(v) if isinstance(v, list) else v) for k, v in values.items()}
    if pins:
        kw["kernel_pins"] = {**base.kernel_pins, **pins}
    return replace(base, **kw)


def _positive_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def value_problem(attr: str, v) -> Optional[str]:
    """Why a setting's value cannot be used (None when it can)."""
    if attr in ("loop_bound", "depth", "max_configs", "max_ctas"):
        if attr == "loop_bound" and v is None:
            return None
        return None if _positive_int(v) else "expected a positive integer"
    if attr == "memory_mb":
        return None if _positive_int(v) and v >= 16 else "expected an integer of at least 16 (MB)"
    if attr == "timeout":
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 86_400
        return None if ok else "expected a number of seconds above 0 (at most a day)"
    if attr in ("strict", "verify_fixes"):
        return None if isinstance(v, bool) else "expected true or false"
    if attr == "extra_paths":
        ok = isinstance(v, (list, tuple)) and all(isinstance(p, str) and p.strip() for p in v)
        return None if ok else "expected a list of folders"
    if attr in ("spin", "compiler"):
        if attr == "compiler" and v is None:
            return None
        return None if isinstance(v, str) and v.strip() else "expected the name or path of an executable"
    return None


def settings_for_path(path: Path, base: Optional[Settings] = None) -> Settings:
    base = base or Settings()
    start = path if path.is_dir() else path.parent
    pyproject = find_pyproject(start)
    return settings_from_pyproject(base, load_pyproject(pyproject), pyproject.parent if pyproject else None)


def setting_names() -> list:
    return [f.name for f in fields(Settings)]


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
