"""Shared helpers of the benchmarks: statistics, Markdown tables, the machine's description,
Promela variants."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "server") not in sys.path:
    sys.path.insert(0, str(ROOT / "server"))


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def pct(xs, q: float):
    """The q-th percentile (0..100), linear interpolation between closest ranks."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def ms(x, digits: int = 0) -> str:
    return "–" if x is None else f"{x * 1000:,.{digits}f}"


def secs(x, digits: int = 2) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def num(x) -> str:
    return "–" if x is None else f"{x:,}"


def table(headers: list, rows: list, align: str | None = None) -> str:
    """A Markdown table; `align` is one letter per column (l/r), default: first left, rest right."""
    align = align or "l" + "r" * (len(headers) - 1)
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(headers)]

    def line(vals):
        out = []
        for v, w, a in zip(vals, widths, align):
            out.append(v.ljust(w) if a == "l" else v.rjust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":" if a == "r" else ":" + "-" * (w + 1)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line([str(h) for h in headers]), sep] + [line(r) for r in cells])


def _first_line(cmd: list) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "absent"


def machine() -> str:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.0f} GiB RAM"
                break
    except OSError:
        pass
    tools = []
    spin = _first_line(["spin", "-V"])
    tools.append(spin.replace("Spin Version", "SPIN").split(" --")[0])
    if shutil.which("tcc"):
        tools.append(_first_line(["tcc", "-v"]).split(" (")[0])
    if shutil.which("gcc"):
        tools.append("gcc " + _first_line(["gcc", "-dumpfullversion"]))
    return (f"{os.cpu_count()} cores ({cpu or platform.processor()}), {mem}, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, " + ", ".join(tools))


def load() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"


def header(title: str, argv: list) -> str:
    cmd = "python " + " ".join([os.path.relpath(argv[0], ROOT) if os.path.isabs(argv[0]) else argv[0]] + argv[1:])
    return (f"## {title}\n\nmachine: {machine()}  \ncommand: `{cmd}`  \n"
            f"load average (1/5/15 min) at the start: {load()}\n")


# ------------------------------------------------------------------------------ Promela variants


def _whole_op(line: str) -> str:
    """One op that the lowering split into several d_steps (SPIN limits a d_step's size) stays
    indivisible: `d_step {..}; d_step {..}` becomes `atomic { d_step {..}; d_step {..} }`."""
    indent = line[:len(line) - len(line.lstrip())]
    return f"{indent}atomic {{ {line.strip()} }}"


def strip_atomic(text: str) -> str:
    """The model without the wait-to-wait reduction of docs/policies.md P10: every warp process's
    body loses its `atomic { ... }` sequences (the enclosing one, the one per trip-count
    configuration, and those a runtime branch past the path budget ends and restarts), so SPIN
    may interleave the warps between any two operations (each operation stays indivisible).
    `init` keeps its atomic start-up. Line numbers are kept, so the model's line table still
    maps a trail to the source. Inside a process every operation is one line, so a line that is
    only a brace, or an option that starts with `atomic {`, is one of these sequences; a d_step
    that spans the lines of several operations (`pack_effects`) becomes one block per line."""
    out = []
    in_proc = in_run = False
    procs = stripped = 0
    for line in text.split("\n"):
        indent, body = line[:len(line) - len(line.lstrip())], line.strip()
        if in_proc and (in_run or body.startswith(("d_step { ", "atomic { "))) and body.endswith(";"):
            # A d_step the lowering packed over several op lines: one block per op again.
            if not in_run:
                body = body.split("{ ", 1)[1]
            out.append(f"{indent}atomic {{ {body[:-1]} }}")
            in_run = True
            continue
        if in_run:
            out.append(f"{indent}atomic {{ {body[:-2]} }}")  # the run's last line ends with " }"
            in_run = False
            continue
        if line.startswith("proctype P"):
            in_proc, seen = True, False
            procs += 1
        elif in_proc and line == "}":
            in_proc = False
            stripped += seen
        elif in_proc and body in ("atomic {", "atomic { skip"):
            line, seen = indent + "skip;", True
        elif in_proc and body in ("}", "};"):
            line, seen = "", True
        elif in_proc and body.startswith(":: atomic { "):
            line, seen = indent + ":: " + body[len(":: atomic { "):], True
        elif in_proc and line.count("d_step {") > 1:
            line = _whole_op(line)
        out.append(line)
    if stripped != procs:
        raise ValueError("per-process atomic wrappers not found: has the lowering's layout changed?")
    return "\n".join(out)


def model_text(source: str) -> str:
    """The Promela model cutespin lowers for the first kernel of a source text."""
    from cutespin.config import Settings
    from cutespin.frontend import build_models
    from cutespin.model.promela import lower
    return lower(build_models(source, "bench.py", Settings())[0]).text


def run(cmd, cwd, timeout=600):
    """(seconds, exit code, stdout + stderr) of a command."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return time.monotonic() - t0, p.returncode, p.stdout + p.stderr
