"""Run SPIN on a Promela model: spin -a, compile pan (tcc when present), run pan, replay the trail.

Every tool runs as an argument-list subprocess (no shell) in a private temp dir, in its own
process group, killed with the group on timeout or cancellation. A search cut short by depth,
memory, time or an interrupt is *incomplete* and must never be reported as verified (SPIN prints
"errors: 0" in all of those cases).
"""
from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

INCOMPLETE_MARKERS = {
    "max search depth too small": "depth",
    "reached -DMEMLIM bound": "memory",
    "out of memory": "memory",
    "Interrupted": "time",
    "Time limit": "time",
    "VECTORSZ too small": "vector",
    "too many processes": "processes",
}

STEP_RE = re.compile(
    r"^\s*(\d+):\s+proc\s+(-|\d+)\s+\((.+?)(?::(\d+))?\)\s+(\S+?):(\d+)\s+\(state\s+(\d+)\)(?:\s+\[(.*)\])?(\s+<valid end state>)?\s*$")


GLOBAL_RE = re.compile(r"^\t\t([A-Za-z_]\w*(?:\[\d+\])?) = (-?\d+)\s*$")


class ToolError(Exception):
    """A tool is missing or failed in a way the user must fix (install, configure)."""


class Cancelled(Exception):
    pass


class InternalError(Exception):
    """cutespin produced something SPIN or the compiler rejects: a bug in cutespin, never a verdict."""


class BoundHit(Exception):
    """A tool ran past its time budget."""


# `spin -a` without its dataflow analysis (-o1, dead-variable resets) and statement merging
# (-o3): together they skip a pass whose cost is quadratic in the statements of a process (it
# looks up every state in a list), which took most of `spin -a`'s time on large models. Our
# models lose nothing measurable: their bodies are d_steps inside atomic sequences already, and
# every sample gives the same number of states with and without them.
GENERATOR_OPTIONS = ("-o1", "-o3")

@dataclass
class CancelToken:
    """Cancellation shared with whoever runs the check; kills the running tool's process group."""

    _event: threading.Event = field(default_factory=threading.Event)
    _procs: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cancel(self):
        self._event.set()
        with self._lock:
            for p in list(self._procs):
                _kill_group(p)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def register(self, p):
        with self._lock:
            self._procs.append(p)
            if self._event.is_set():
                _kill_group(p)

    def unregister(self, p):
        with self._lock:
            if p in self._procs:
                self._procs.remove(p)


def _kill_group(p: subprocess.Popen, sig=signal.SIGKILL):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Tools:
    spin: str
    compiler: str
    compiler_name: str
    spin_version: str
    spin_args: tuple = ()  # e.g. the preprocessor (-P) when gcc is not on PATH


def _preprocessor_args(cc: str) -> Optional[tuple]:
    """SPIN runs every model through `gcc -E` (its compiled-in preprocessor, through the shell),
    also for `-a` and trail replay; the Debian package does not depend on gcc. Without gcc on PATH,
    point it at tcc (or cpp). None when there is no preprocessor at all."""
    if shutil.which("gcc"):
        return ()
    tcc = cc if os.path.basename(cc) == "tcc" else shutil.which("tcc")
    if tcc:
        return (f"-P{shlex.quote(tcc)} -E -xc",)
    cpp = shutil.which("cpp")
    if cpp:
        return (f"-P{shlex.quote(cpp)}",)
    return None


_tools_cache: dict = {}


def find_tools(spin: str = "spin", compiler: Optional[str] = None) -> Tools:
    key = (spin, compiler)
    if key in _tools_cache:
        return _tools_cache[key]
    spin_path = shutil.which(spin)
    if spin_path is None:
        raise ToolError(f"SPIN was not found (looked for `{spin}` on PATH). Install it with "
                        f"`sudo apt-get install spin` (Debian/Ubuntu) or set `spin` in [tool.cutespin].")
    if compiler:
        cc = shutil.which(compiler)
        if cc is None:
            raise ToolError(f"the C compiler `{compiler}` was not found; install it or unset `compiler`.")
    else:
        cc = shutil.which("tcc") or shutil.which("gcc") or shutil.which("cc")
        if cc is None:
            raise ToolError("no C compiler found to build SPIN's verifier: install tcc "
                            "(`sudo apt-get install tcc`) or gcc.")
    try:
        out = subprocess.run([spin_path, "-V"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolError(f"`{spin_path} -V` failed ({e}); reinstall SPIN.") from None
    m = re.search(r"Spin Version ([\d.]+)", out)
    if not m:
        raise ToolError(f"`{spin_path} -V` printed something unexpected ({out[:80]!r}); is it SPIN?")
    spin_args = _preprocessor_args(cc)
    if spin_args is None:
        raise ToolError("SPIN needs a C preprocessor to read its models and there is no gcc, tcc or cpp on PATH: "
                        "install tcc (`sudo apt-get install tcc`) or gcc.")
    tools = Tools(spin_path, cc, os.path.basename(cc), m.group(1), spin_args)
    _tools_cache[key] = tools
    return tools


@dataclass
class RunResult:
    status: str  # "ok" | "error" | "incomplete"
    error: Optional[str] = None  # "assertion" | "deadlock"
    assertion: Optional[str] = None
    incomplete: Optional[str] = None  # which bound
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    steps: list = field(default_factory=list)  # list[Step]
    blocked: list = field(default_factory=list)  # list[(proc name, pml line)]
    fail_line: Optional[int] = None
    raw: str = ""
    timings: dict = field(default_factory=dict)
    globals: list = field(default_factory=list)  # (depth, name, value) in trail order


@dataclass
class Step:
    depth: int
    pid: int
    proc: str
    line: int


# Extra CPU seconds a tool may use past its time bound before the kernel stops it on its own.
CPU_CAP_SLACK_S = 10


def _cpu_capped(cmd: list, timeout: float) -> list:
    """The command under a CPU-time limit of its own (`prlimit`, which sets it and execs the tool:
    same process, same group). The parent enforces the time bound; the cap is what stops a pan
    whose parent was killed outright (SIGKILL of a server or worker leaves its tools' separate
    process groups orphaned, and pan has no bound of its own). Without prlimit: no cap."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return list(cmd)
    soft = int(math.ceil(timeout)) + CPU_CAP_SLACK_S
    return [prlimit, f"--cpu={soft}:{soft + 5}", "--", *cmd]


def _run(cmd, cwd, timeout, token: Optional[CancelToken], interrupt_after: Optional[float] = None):
    """Run a command in its own process group. Returns (rc, stdout+stderr, interrupted)."""
    if token is not None and token.cancelled:
        raise Cancelled()
    p = subprocess.Popen(_cpu_capped(cmd, timeout), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    if token is not None:
        token.register(p)
    interrupted = False
    try:
        try:
            out, _ = p.communicate(timeout=interrupt_after if interrupt_after is not None else timeout)
        except subprocess.TimeoutExpired:
            if interrupt_after is not None:
                # pan traps SIGINT, prints its statistics and exits: an incomplete search.
                interrupted = True
                _kill_group(p, signal.SIGINT)
                try:
                    out, _ = p.communicate(timeout=5)
                except subprocess.TimeoutExpired:
                    _kill_group(p)
                    out, _ = p.communicate()
            else:
                _kill_group(p)
                out, _ = p.communicate()
                raise BoundHit(f"`{os.path.basename(cmd[0])}` did not finish within {timeout:.1f} s") from None
    finally:
        if token is not None:
            token.unregister(p)
        if p.poll() is None:
            _kill_group(p)
            p.wait()
    if token is not None and token.cancelled:
        raise Cancelled()
    return p.returncode, out, interrupted


def _hash_width(expected_states: int) -> int:
    return max(16, min(24, int(math.log2(max(expected_states, 2))) + 1))


# Builds of pan with a larger state vector after pan reports VECTORSZ too small.
VECTOR_ATTEMPTS = 3
# The state vector pan is first built for. pan sizes a few buffers by it but stores and hashes each
# state at its real size: a model of 4.4 KB states took the same time and memory built at 16 KB and
# at 64 KB, a model of 200-byte states the same at 2 KB and 64 KB (tcc, 2026-12-05). Large corpus
# models (cuDNN's frost kernels) need more than 4 KB, and a rebuild cost them their time bound.
INITIAL_VECTORSZ = 65536


# pan hashes every state it reaches, stored or matched, with Paul Hsieh's hash, two bytes at a
# time. Built unoptimised (tcc, gcc -O0) that loop took two thirds of pan's time on corpus models
# of 4 KB states. This hash reads eight bytes at a time; built by tcc it hashes about four times
# faster, and pan's search is unchanged: a hash only picks the slot where pan looks for a state,
# which it then compares byte for byte (bench/hash.py). Only the K1 it sets is read in an exact
# (non-bitstate) search; K2 is set as well so that nothing reads it unset.
WORD_HASH_C = r"""
/* cutespin: a word-at-a-time state hash, in place of d_sfh (see cutespin/engine/spin.py) */
void
cutespin_word_hash(uchar *s, int len)
{	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t) len, w;
	int i = 0;
	for ( ; i + 8 <= len; i += 8)
	{	memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s + i, len - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 29;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 32;
	K1 = (ulong) h;
	K2 = (ulong) (h >> 17 | h << 47);
}
"""
# Where pan.c picks its hash for hash tables of up to 2^32 slots (all our -w): SPIN 6.x.
_HASH_CHOICE = "hasher = d_sfh;"


def with_word_hash(pan_c: str) -> str:
    """pan.c with its state hash replaced by WORD_HASH_C, when it picks the hash the way SPIN
    6.x does (exactly once, `hasher = d_sfh;`); any other pan.c is returned as it is, so that a
    SPIN version laid out differently still builds, only slower."""
    if pan_c.count(_HASH_CHOICE) != 1 or "#include <stdint.h>" not in pan_c:
        return pan_c
    pick = "{ extern void cutespin_word_hash(uchar *, int); hasher = cutespin_word_hash; }"
    return pan_c.replace(_HASH_CHOICE, pick) + WORD_HASH_C


def compile_command(tools: Tools, memory_mb: int, vectorsz: int) -> list:
    """The command that builds pan. tcc builds it fastest by far. Without tcc, gcc at -O0: it
    builds pan.c about 3x faster than -O1 (a 518 KB model: 3.2 s instead of 11 s, against the
    editor's 5 s budget per kernel), and -O1's twice faster search only pays for its build
    beyond roughly 150k states (bench/compile.py, bench/RESULTS.md).

    -DNOCOMP: pan stores each state as it is instead of first squeezing out the padding bytes
    of its state vector, a byte-by-byte loop that took half of pan's time on corpus models of
    4 KB states (unoptimised builds) for no memory saved: our vectors have hardly any padding.
    The search is the same, state for state (bench/hash.py)."""
    cc = [tools.compiler, "-DSAFETY", "-DNOCOMP", f"-DMEMLIM={int(memory_mb)}", f"-DVECTORSZ={vectorsz}",
          "-o", "pan", "pan.c"]
    if tools.compiler_name != "tcc":
        cc.insert(1, "-O0")
    return cc


def check_model(text: str, tools: Tools, *, timeout: float = 20.0, depth: int = 100_000, memory_mb: int = 1024,
                token: Optional[CancelToken] = None, keep_dir: Optional[str] = None) -> RunResult:
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="cutespin-")
    os.chmod(tmp, 0o700)
    timings = {}
    try:
        pml = os.path.join(tmp, "m.pml")
        with open(pml, "w") as fh:
            fh.write(text)
        t0 = time.monotonic()
        try:
            rc, out, _ = _run([tools.spin, *tools.spin_args, *GENERATOR_OPTIONS, "-a", "m.pml"], tmp, timeout, token)
        except BoundHit:
            return RunResult(status="incomplete", incomplete="time", seconds=time.monotonic() - start,
                             timings={"spin_a": time.monotonic() - t0})
        timings["spin_a"] = time.monotonic() - t0
        if rc != 0 or not os.path.exists(os.path.join(tmp, "pan.c")):
            if rc > 0 and re.search(r"m\.pml:\d+", out):  # spin's own complaint about the model
                raise InternalError(f"`spin -a` rejected the generated model:\n{out.strip()[:2000]}")
            if "preprocessing failed" in out:
                raise ToolError(f"SPIN could not run the C preprocessor on its model (gcc -E, or tcc -E when gcc "
                                f"is absent): reinstall it (`sudo apt-get install tcc`, or gcc). Its output:\n"
                                f"{out.strip()[-1000:]}")
            raise ToolError(f"`{tools.spin} -a` failed (exit {rc}) without building a verifier: the SPIN "
                            f"installation looks broken; reinstall it (`sudo apt-get install spin`). Its output:\n"
                            f"{out.strip()[-1000:]}")
        pan_c = os.path.join(tmp, "pan.c")
        with open(pan_c) as fh:
            text_c = fh.read()
        with open(pan_c, "w") as fh:
            fh.write(with_word_hash(text_c))
        vectorsz = INITIAL_VECTORSZ
        for attempt in range(VECTOR_ATTEMPTS):
            t0 = time.monotonic()
            cc = compile_command(tools, memory_mb, vectorsz)
            try:
                rc, out, _ = _run(cc, tmp, max(1.0, timeout - (time.monotonic() - start)), token)
            except BoundHit:
                return RunResult(status="incomplete", incomplete="time", seconds=time.monotonic() - start,
                                 timings={**timings, "compile": time.monotonic() - t0})
            timings["compile"] = timings.get("compile", 0.0) + time.monotonic() - t0
            if rc != 0 or not os.path.exists(os.path.join(tmp, "pan")):
                if rc > 0 and re.search(r"\bpan\.[chmbt]:\d+", out) and not _install_problem(out):
                    raise InternalError(f"`{tools.compiler_name}` could not build pan.c:\n{out.strip()[:2000]}")
                raise ToolError(f"the C compiler `{tools.compiler}` failed (exit {rc}) building SPIN's verifier: "
                                f"reinstall it (`sudo apt-get install tcc`, or gcc). Its output:\n"
                                f"{out.strip()[-1000:]}")
            remaining = max(0.5, timeout - (time.monotonic() - start))
            t0 = time.monotonic()
            rc, out, interrupted = _run(["./pan", "-n", f"-m{depth}", f"-w{_hash_width(200_000)}", "-c1"], tmp,
                                        remaining, token, interrupt_after=remaining)
            timings["pan"] = timings.get("pan", 0.0) + time.monotonic() - t0
            # A state vector larger than the compiled bound: pan stops near depth 0. Rebuild with
            # room for it (the model is the same; only the verifier's buffer grows). The size pan
            # names is the vector's so far (its processes start one by one), hence the doubling.
            m = re.search(r"VECTORSZ too small, recompile pan.c with -DVECTORSZ=N with N>(\d+)", out)
            if not m or attempt == VECTOR_ATTEMPTS - 1:
                break
            vectorsz = max(2 * vectorsz, (int(m.group(1)) // 1024 + 2) * 1024)
        if interrupted and rc < 0 and "errors:" not in out:
            # Past the time bound pan ignored SIGINT and was killed: a cut-short search, not a crash.
            return RunResult(status="incomplete", incomplete="time", raw=out, seconds=time.monotonic() - start,
                             timings=timings)
        if rc < 0 or ("pan:" not in out and "State-vector" not in out and "errors:" not in out):
            raise ToolError(f"SPIN's verifier (pan) crashed (exit {rc}); check the SPIN and compiler "
                            f"installation. Its output:\n{out.strip()[-2000:]}")
        res = parse_pan(out)
        if interrupted and res.status == "ok":
            res.status, res.incomplete = "incomplete", "time"
        if res.status == "error":
            t0 = time.monotonic()
            try:
                rc, trail, _ = _run([tools.spin, *tools.spin_args, "-t", "-p", "-g", "-l", "-k", "m.pml.trail", "m.pml"],
                                    tmp, 30, token)
            except BoundHit:
                trail = ""
            timings["trail"] = time.monotonic() - t0
            parse_trail(trail, res)
        if keep_dir:
            os.makedirs(keep_dir, exist_ok=True)
            for f in ("m.pml", "m.pml.trail"):
                if os.path.exists(os.path.join(tmp, f)):
                    shutil.copy(os.path.join(tmp, f), os.path.join(keep_dir, f))
        res.seconds = time.monotonic() - start
        res.timings = timings
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def parse_pan(out: str) -> RunResult:
    res = RunResult(status="ok", raw=out)
    # pan prints counts with %g: 1.2345678e+08 from a hundred million on.
    m = re.search(r"([\d.]+(?:e[+-]?\d+)?) states, stored", out)
    res.states = int(float(m.group(1))) if m else 0
    m = re.search(r"([\d.]+(?:e[+-]?\d+)?) transitions", out)
    res.transitions = int(float(m.group(1))) if m else 0
    m = re.search(r"depth reached (\d+)", out)
    res.depth = int(m.group(1)) if m else 0
    if re.search(r"pan:\d+:\s+assertion violated", out):
        res.status, res.error = "error", "assertion"
        m = re.search(r"assertion violated (.*?) \(at depth", out)
        res.assertion = m.group(1).strip() if m else None
    elif re.search(r"pan:\d+:\s+invalid end state", out):
        res.status, res.error = "error", "deadlock"
    else:
        m = re.search(r"errors: (\d+)", out)
        if m and int(m.group(1)) > 0:
            res.status, res.error = "error", "other"
            # pan counts an abort (VECTORSZ, memory, ...) as an error: the search was cut short.
            for marker, bound in INCOMPLETE_MARKERS.items():
                if marker in out:
                    res.status, res.error, res.incomplete = "incomplete", None, bound
                    break
    if res.status == "ok":
        for marker, bound in INCOMPLETE_MARKERS.items():
            if marker in out:
                res.status, res.incomplete = "incomplete", bound
                break
        if "errors:" not in out or "states, stored" not in out:
            res.status, res.incomplete = "incomplete", res.incomplete or "unknown"
        elif re.search(r"^(Bit statespace|Hash-Compact \d+) search for:", out, re.M):
            # A lossy search may skip states: probabilistic, never a proof (docs/policies.md P9).
            res.status, res.incomplete = "incomplete", "bitstate" if "Bit statespace" in out else "hash-compact"
    return res


def _install_problem(out: str) -> bool:
    """Compiler output that points at the installation (headers or libraries), not at pan.c."""
    return bool(re.search(r"include file|No such file|cannot find|not found|undefined reference|library",
                          out, re.I))


def parse_trail(text: str, res: RunResult):
    """Fill `steps`, `blocked` and `fail_line` from `spin -t -p -g -l` output.

    The trail ends at the failing assertion: the simulator goes on with the rest of its d_step
    (which may hold the next ops of the warp, `Lowering.pack_effects`) and prints those steps
    and values too, but pan stopped at the assertion, so they are not part of the interleaving."""
    steps = []
    final = False
    blocked = []
    values = []
    depth = 0
    seen_failure = False
    ended = False  # past the failing assertion's own step
    for line in text.splitlines():
        if line.startswith("#processes:"):
            final = True
            depth = 1 << 29
            continue
        g = GLOBAL_RE.match(line)
        if g:
            if not ended or final:
                values.append((depth, g.group(1), g.group(2)))
            continue
        m = STEP_RE.match(line)
        if m:
            sdepth, pid, proc, _, _, pline, _, _, valid = m.groups()
            if pid == "-":
                continue
            if not final:
                depth = int(sdepth)
            if final:
                if not valid:
                    blocked.append((proc, int(pline)))
            elif not ended:
                steps.append(Step(depth, int(pid), proc, int(pline)))
                ended = seen_failure and int(pline) == res.fail_line
            continue
        # The simulator keeps going inside a d_step and reports every later failing assert too:
        # only the first failure is the one pan found.
        m = re.match(r"spin: \S+:(\d+), Error: assertion violated", line)
        if m and not seen_failure:
            res.fail_line = int(m.group(1))
        m = re.match(r"spin: text of failed assertion: (.*)$", line)
        if m and not seen_failure:
            res.assertion = m.group(1).strip()
            seen_failure = True
            # A simulator that printed the assertion's step first: the trail ends there.
            ended = bool(steps) and steps[-1].line == res.fail_line
    res.steps = steps
    res.blocked = blocked
    res.globals = values
