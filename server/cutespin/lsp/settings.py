"""The editor's options for cutespin, parsed once into a typed, immutable value.

Options come from `workspace/configuration` (section `cutespin`), refreshed on
`workspace/didChangeConfiguration`; clients that cannot answer configuration requests pass the
same object as `initializationOptions` (optionally wrapped as `{"cutespin": {...}}`).

Keys (camelCase; snake_case and the pyproject kebab-case are accepted too):

| key | meaning | editor default |
|---|---|---|
| `spin` | path or name of the spin executable | `spin` |
| `compiler` | C compiler for SPIN's verifier | tcc, else gcc |
| `loopBound` | trip-count bound for runtime loops | 2 x stages + 1, or 3 |
| `depth` | search depth bound | 100000 |
| `timeout` | seconds per kernel | 5 (the CLI's is 20) |
| `memoryMb` | memory bound of one search | 512 (the CLI's is 1024) |
| `strict` | also flag CUTLASS-tolerated patterns | false |
| `verifyFixes` | propose fixes and re-check them with SPIN | true |
| `trigger` | `onSave` or `onType` (debounced) | `onSave` |
| `debounceMs` | delay after the last keystroke in `onType` mode | 500 |
| `severity` | per code: `error`, `warning`, `information`, `hint` or `off` | - |
| `extraPaths` | extra package roots for the modules a kernel imports (helpers of another installed package) | - |

Precedence, lowest first: the CLI defaults, the editor defaults above, `[tool.cutespin]` of the
nearest pyproject.toml, then every option the user set explicitly in the editor.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Optional

from ..config import Settings, settings_for_path

SECTION = "cutespin"
TRIGGERS = ("onSave", "onType")
SEVERITIES = ("error", "warning", "information", "hint", "off")
CODE_PATTERN_PREFIX = "CS"

# What the editor uses when neither the user nor pyproject says otherwise: tighter than the CLI.
EDITOR_DEFAULTS = {"timeout": 5.0, "memory_mb": 512}


@dataclass(frozen=True)
class ServerOptions:
    """Options as the user set them; `None` means "not set" (defaults and pyproject apply)."""

    spin: Optional[str] = None
    compiler: Optional[str] = None
    loop_bound: Optional[int] = None
    depth: Optional[int] = None
    timeout: Optional[float] = None
    memory_mb: Optional[int] = None
    strict: Optional[bool] = None
    verify_fixes: Optional[bool] = None
    trigger: str = "onSave"
    debounce_ms: int = 500
    severity: tuple = ()  # ((code, level), ...): hashable, so options compare and cache cleanly
    extra_paths: tuple = ()

    def severity_for(self, code: str) -> Optional[str]:
        return dict(self.severity).get(code)

    def core_settings(self, path: Optional[Path], fallback_dir: Optional[Path] = None) -> Settings:
        """The checker's settings for one document (its pyproject.toml is read from disk)."""
        base = Settings(**EDITOR_DEFAULTS)
        start = path if path is not None else fallback_dir
        settings = settings_for_path(start, base) if start is not None else base
        explicit = {name: getattr(self, name) for name in CORE_FIELDS}
        if not self.extra_paths:
            del explicit["extra_paths"]  # not set in the editor: pyproject's (or none) stand
        return settings.with_overrides(**explicit)


# option key -> (ServerOptions field, parser)
CORE_FIELDS = ("spin", "compiler", "loop_bound", "depth", "timeout", "memory_mb", "strict", "verify_fixes",
               "extra_paths")


def _str(v):
    if not isinstance(v, str) or not v.strip():
        raise ValueError("expected a non-empty string")
    return v.strip()


def _positive_int(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or v < 1:
        raise ValueError("expected a positive integer")
    return int(v)


def _memory(v):
    v = _positive_int(v)
    if v < 16:
        raise ValueError("expected at least 16 (MB)")
    return v


def _positive_float(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise ValueError("expected a positive number of seconds")
    return float(v)


def _bool(v):
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _trigger(v):
    if v not in TRIGGERS:
        raise ValueError(f"expected one of {', '.join(TRIGGERS)}")
    return v


def _debounce(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ValueError("expected a number of milliseconds >= 0")
    return int(v)


def _severity(v):
    if not isinstance(v, dict):
        raise ValueError('expected an object such as {"CS201": "warning"}')
    out = []
    for code, level in v.items():
        if not isinstance(code, str) or not code.upper().startswith(CODE_PATTERN_PREFIX):
            raise ValueError(f"unknown code {code!r}")
        if not isinstance(level, str) or level.lower() not in SEVERITIES:
            raise ValueError(f"{code}: expected one of {', '.join(SEVERITIES)}")
        out.append((code.upper(), level.lower()))
    return tuple(sorted(out))


def _paths(v):
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(p, str) for p in v):
        raise ValueError("expected a list of folders")
    return tuple(v)


PARSERS = {
    "spin": _str, "compiler": _str, "loop_bound": _positive_int, "depth": _positive_int,
    "timeout": _positive_float, "memory_mb": _memory, "strict": _bool, "verify_fixes": _bool,
    "trigger": _trigger, "debounce_ms": _debounce, "severity": _severity, "extra_paths": _paths,
}
ALIASES = {"spinPath": "spin", "compilerPath": "compiler", "memory": "memory_mb", "fixes": "verify_fixes"}


def _field_name(key: str) -> Optional[str]:
    key = ALIASES.get(key, key)
    snake = "".join("_" + c.lower() if c.isupper() else c for c in key).replace("-", "_").lstrip("_")
    return snake if snake in PARSERS else None


def parse_options(raw: Any) -> tuple:
    """(ServerOptions, problems): invalid or unknown keys are reported and left at their default."""
    problems = []
    if raw is None:
        return ServerOptions(), problems
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    if not isinstance(raw, dict):
        return ServerOptions(), [f"cutespin settings: expected an object, got {type(raw).__name__}"]
    kw = {}
    for key, value in raw.items():
        name = _field_name(key)
        if name is None:
            problems.append(f"cutespin settings: unknown option `{key}` (ignored)")
            continue
        if value is None:
            continue
        try:
            kw[name] = PARSERS[name](value)
        except ValueError as e:
            problems.append(f"cutespin settings: `{key}`: {e}; using the default")
    return replace(ServerOptions(), **kw), problems


def option_names() -> list:
    return [f.name for f in fields(ServerOptions)]
