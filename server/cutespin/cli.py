"""`cutespin check PATH...` and `cutespin serve`.

Exit codes: 0 every kernel verified; 1 a counterexample was found; 2 usage or tool error;
3 no counterexample but some kernel is inconclusive (0 with --allow-inconclusive).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from . import api
from .config import Settings, settings_for_path, value_problem
from .engine.spin import ToolError, find_tools

SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", "build", "dist", ".mypy_cache"}
EXIT_OK, EXIT_FOUND, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 3


def iter_files(paths: list) -> list:
    out = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for f in sorted(files):
                    if f.endswith(".py"):
                        out.append(Path(root) / f)
        else:
            out.append(path)
    return out


def _read(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def fingerprint(path: str, qualname: str, code: str, source_line: str, root: Path = Path(".")) -> str:
    """Stable across line shifts and however the path was typed: the file (relative to the
    baseline's folder), kernel, code and the text of the flagged line."""
    try:
        rel = os.path.relpath(Path(path).resolve(), root.resolve())
    except ValueError:  # another drive
        rel = str(Path(path).resolve())
    # surrogateescape: file names that are not UTF-8 come from os.walk as lone surrogates
    h = hashlib.sha256(f"{rel}\0{qualname}\0{code}\0{source_line.strip()}".encode("utf-8", "surrogateescape"))
    h = h.hexdigest()
    return h[:24]


def _baseline_entries(results: list, root: Path) -> list:
    out = []
    for fr in results:
        lines = _read(Path(fr.path)).splitlines() if Path(fr.path).exists() else []
        for kr in fr.kernels:
            for f in kr.findings:
                text = lines[f.span.line - 1] if 0 < f.span.line <= len(lines) else ""
                out.append({"path": fr.path, "qualname": kr.qualname, "code": f.code, "line": f.span.line,
                            "fingerprint": fingerprint(fr.path, kr.qualname, f.code, text, root)})
    return out


def apply_baseline(results: list, baseline: Path) -> None:
    """Drop findings recorded in the baseline; the kernel's verdict is kept (it still has them)."""
    try:
        known = {e["fingerprint"] for e in json.loads(baseline.read_text()).get("findings", [])}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ToolError(f"cannot read baseline {baseline}: {e}") from None
    for fr in results:
        lines = _read(Path(fr.path)).splitlines() if Path(fr.path).exists() else []
        for kr in fr.kernels:
            kept = []
            for f in kr.findings:
                text = lines[f.span.line - 1] if 0 < f.span.line <= len(lines) else ""
                if fingerprint(fr.path, kr.qualname, f.code, text, baseline.parent) not in known:
                    kept.append(f)
            if len(kept) != len(kr.findings):
                kr.findings = kept
                if not kept:
                    kr.verdict = "inconclusive"
                    kr.reason = "only baseline findings were found; the search stops at the first error"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cutespin", description="Model-check CuTe DSL kernel synchronization with SPIN.")
    ap.add_argument("--version", action="version", version=f"cutespin {api.__version__}")
    sub = ap.add_subparsers(dest="command")
    c = sub.add_parser("check", help="check files and folders")
    c.add_argument("paths", nargs="+")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    c.add_argument("--emit-promela", metavar="DIR", help="write each kernel's Promela model and line map here")
    c.add_argument("--loop-bound", type=int, help="trip count bound for runtime loops (default 2 x stages + 1)")
    c.add_argument("--timeout", type=float, help="seconds per kernel (default 20)")
    c.add_argument("--depth", type=int, help="search depth bound (default 100000)")
    c.add_argument("--memory-mb", type=int, help="memory bound for the search in MB (default 1024)")
    c.add_argument("--strict", action="store_true", default=None, help="flag CUTLASS-tolerated patterns too")
    c.add_argument("--baseline", metavar="FILE", help="record findings to FILE, or report only findings not in it")
    c.add_argument("--allow-inconclusive", action="store_true", help="exit 0 instead of 3 for inconclusive kernels")
    c.add_argument("--no-fixes", action="store_true", help="do not propose and re-verify fixes")
    c.add_argument("--no-trace", action="store_true", help="text format: omit the interleaving")
    c.add_argument("-v", "--verbose", action="store_true", help="text format: show every verdict and its assumptions")
    c.add_argument("--spin", help="path of the spin executable")
    c.add_argument("--extra-path", action="append", metavar="DIR", dest="extra_paths",
                   help="also look here for the modules a kernel imports (repeatable; e.g. the "
                        "site-packages holding another package's helpers)")
    s = sub.add_parser("serve", help="run the language server over stdio")
    s.add_argument("--stdio", action="store_true", help="accepted for compatibility; stdio is the only transport")
    s.add_argument("--log-file", metavar="FILE", help="write the server's log to FILE (never to stdout)")
    s.add_argument("-v", "--verbose", action="store_true", help="debug-level logging")
    return ap


def _safe_output_streams() -> None:
    """Never fail on printing: a file name that is not UTF-8 goes out as its own bytes
    (surrogateescape), and a terminal that is not UTF-8 gets escapes instead of an exception."""
    for stream in (sys.stdout, sys.stderr):
        try:
            utf8 = (stream.encoding or "").lower().replace("-", "").replace("_", "") == "utf8"
            stream.reconfigure(errors="surrogateescape" if utf8 else "backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def cmd_check(args) -> int:
    _safe_output_streams()
    overrides = dict(loop_bound=args.loop_bound, timeout=args.timeout, depth=args.depth, memory_mb=args.memory_mb,
                     strict=args.strict, spin=args.spin,
                     extra_paths=tuple(str(Path(p).resolve()) for p in args.extra_paths) if args.extra_paths else None)
    if args.no_fixes:
        overrides["verify_fixes"] = False
    for name, v in (("loop_bound", args.loop_bound), ("timeout", args.timeout), ("depth", args.depth),
                    ("memory_mb", args.memory_mb)):
        problem = value_problem(name, v) if v is not None else None
        if problem:
            print(f"cutespin: error: --{name.replace('_', '-')} {v}: {problem}", file=sys.stderr)
            return EXIT_ERROR
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"cutespin: error: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return EXIT_ERROR
    base = Settings().with_overrides(**overrides)
    try:
        tools = find_tools(base.spin, base.compiler)
    except ToolError as e:
        print(f"cutespin: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    results, errors = [], []
    for f in iter_files(args.paths):
        try:
            settings = settings_for_path(f, Settings()).with_overrides(**overrides)
        except ValueError as e:
            errors.append((str(f), f"cannot use the settings: {e}"))
            continue
        try:
            text = _read(f)
        except OSError as e:
            errors.append((str(f), f"cannot read: {e.strerror}"))
            continue
        if "kernel" not in text:
            continue
        try:
            fr = api.check_source(text, str(f), settings)
        except ToolError as e:
            print(f"cutespin: error: {e}", file=sys.stderr)
            return EXIT_ERROR
        except Exception as e:  # noqa: BLE001 - a crash on one file must not hide the others
            errors.append((str(f), f"internal error (a cutespin bug; please report it): {_crash_summary(e)}"))
            continue
        if fr.error:
            errors.append((str(f), fr.error))
            continue
        if fr.kernels:
            results.append(fr)
        if args.emit_promela:
            emit_promela(Path(args.emit_promela), fr, f)
    if args.baseline:
        bl = Path(args.baseline)
        if bl.exists():
            try:
                apply_baseline(results, bl)
            except ToolError as e:
                print(f"cutespin: error: {e}", file=sys.stderr)
                return EXIT_ERROR
        else:
            bl.write_text(json.dumps({"version": 1, "findings": _baseline_entries(results, bl.parent)}, indent=2) + "\n")
            print(f"cutespin: recorded {sum(len(k.findings) for r in results for k in r.kernels)} findings in {bl}",
                  file=sys.stderr)
            return EXIT_OK
    tool_info = {"spin": tools.spin_version, "compiler": tools.compiler_name}
    if args.format == "json":
        from .report import to_json
        sys.stdout.write(to_json(results, errors, tool_info) + "\n")
    elif args.format == "sarif":
        from .report import to_sarif
        sys.stdout.write(to_sarif(results, errors, tool_info) + "\n")
    else:
        from .report import to_text
        sys.stdout.write(to_text(results, errors, show_trace=not args.no_trace, verbose=args.verbose))
    return exit_code(results, errors, args.allow_inconclusive)


def _crash_summary(e: BaseException) -> str:
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__}: {e}{where}"


def exit_code(results, errors, allow_inconclusive=False) -> int:
    verdicts = [k.verdict for fr in results for k in fr.kernels]
    if "counterexample" in verdicts:
        return EXIT_FOUND
    if errors:
        return EXIT_ERROR
    if "inconclusive" in verdicts and not allow_inconclusive:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def emit_promela(folder: Path, fr, source: Path) -> None:
    """One `.pml` and `.lines.json` per kernel; the file name carries the source's relative path so
    same-named files in different folders do not overwrite each other."""
    folder.mkdir(parents=True, exist_ok=True)
    rel = os.path.relpath(source.resolve(), Path.cwd())
    stem = rel.replace(os.sep, "__").replace("..", "up").removesuffix(".py")
    for kr in fr.kernels:
        if kr.promela is None:
            continue
        base = folder / f"{stem}.{kr.qualname}"
        Path(str(base) + ".pml").write_text(kr.promela.text)
        # "path" names the sibling module of a helper inlined from another file ("" for the source).
        table = {str(n): {"line": i.span.line if i.span else None, "path": i.span.path if i.span else "",
                          "process": i.process, "what": i.what}
                 for n, i in kr.promela.lines.items()}
        Path(str(base) + ".lines.json").write_text(json.dumps(table, indent=1) + "\n")


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.command == "check":
        return cmd_check(args)
    if args.command == "serve":
        try:
            from .lsp.server import serve
        except ImportError:
            print("cutespin: error: the language server is not part of this build yet "
                  "(it needs `pip install pygls lsprotocol` and the lsp module)", file=sys.stderr)
            return EXIT_ERROR
        return serve(log_file=args.log_file, verbose=args.verbose)
    ap.print_help(sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
