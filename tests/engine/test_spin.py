"""The SPIN engine: parsing pan's report and spin's trail replay, and running real models."""
from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
import threading
import time

import pytest

from cutespin.engine.spin import (
    CancelToken,
    Cancelled,
    RunResult,
    ToolError,
    check_model,
    compile_command,
    find_tools,
    parse_pan,
    parse_trail,
    with_word_hash,
)

# ---------------------------------------------------------------------------------------------
# Canned pan output (the shape SPIN 6.5.2's pan prints with -DSAFETY)

PAN_HEADER = (
    "(Spin Version 6.5.2 -- 6 December 2019)\n"
    "{warning}"
    "\t+ Partial Order Reduction\n"
    "\n"
    "Full statespace search for:\n"
    "\tnever claim         \t- (none specified)\n"
    "\tassertion violations\t+\n"
    "\tcycle checks       \t- (disabled by -DSAFETY)\n"
    "\tinvalid end states\t+\n"
    "\n"
)

PAN_STATS = (
    "State-vector {vector} byte, depth reached {depth}, errors: {errors}\n"
    "{states:>9} states, stored\n"
    "       35 states, matched\n"
    "{transitions:>9} transitions (= stored+matched)\n"
    "       12 atomic steps\n"
    "hash conflicts:         0 (resolved)\n"
    "\n"
    "Stats on memory usage (in Megabytes):\n"
    "    0.017\tequivalent memory usage for states (stored*(State-vector + overhead))\n"
    "    0.286\tactual memory usage for states\n"
    "    0.500\tmemory used for hash table (-w16)\n"
    "    5.341\tmemory used for DFS stack (-m100000)\n"
    "    6.029\ttotal actual memory usage\n"
    "\n"
    "\n"
    "\n"
    "pan: elapsed time 0 seconds\n"
)


def pan_output(prefix="", *, errors=0, states=212, transitions=247, depth=41, warning=False, suffix=""):
    return (prefix + "\n" + PAN_HEADER.format(warning="Warning: Search not completed\n" if warning else "")
            + PAN_STATS.format(vector=84, depth=depth, errors=errors, states=states, transitions=transitions)
            + suffix)


def test_parse_pan_invalid_end_state_is_a_deadlock():
    out = pan_output("pan:1: invalid end state (at depth 37)\npan: wrote m.pml.trail\n", errors=1, warning=True)
    res = parse_pan(out)
    assert res.status == "error"
    assert res.error == "deadlock"
    assert res.assertion is None
    assert res.incomplete is None
    assert (res.states, res.transitions, res.depth) == (212, 247, 41)
    assert res.raw == out


def test_parse_pan_assertion_violation_keeps_the_assertion_text():
    out = pan_output("pan:1: assertion violated ((a_1&42)==0) (at depth 13)\npan: wrote m.pml.trail\n",
                     errors=1, warning=True, depth=14)
    res = parse_pan(out)
    assert res.status == "error"
    assert res.error == "assertion"
    assert res.assertion == "((a_1&42)==0)"
    assert res.depth == 14


def test_parse_pan_clean_search_is_ok_despite_the_header_lines():
    # The header names "assertion violations\t+" and "invalid end states\t+": those are the
    # checks that were enabled, not errors.
    out = pan_output(errors=0)
    assert "assertion violations\t+" in out and "invalid end states\t+" in out
    res = parse_pan(out)
    assert res.status == "ok"
    assert res.error is None
    assert res.incomplete is None
    assert res.states == 212


def test_parse_pan_depth_bound_is_incomplete_even_with_zero_errors():
    out = pan_output("error: max search depth too small\n", errors=0, depth=100000)
    res = parse_pan(out)
    assert res.status == "incomplete"
    assert res.incomplete == "depth"
    assert res.error is None


@pytest.mark.parametrize("prefix", [
    "pan: resizing hashtable to -w22.. pan: reached -DMEMLIM bound\n\t1.86921e+08 bytes used\n"
    "\t3.35544e+07 bytes more needed\n\t2.09715e+08 bytes limit\n",
    "pan: out of memory\n",
])
def test_parse_pan_memory_bound_is_incomplete(prefix):
    res = parse_pan(pan_output(prefix, errors=0, warning=True))
    assert res.status == "incomplete"
    assert res.incomplete == "memory"


def test_parse_pan_interrupt_is_a_time_bound():
    out = ("Depth=  120002 States=    1e+06 Transitions= 1.29e+06 Memory=    92.187\tt=     1.62 R=   6e+05\n"
           + pan_output("Interrupted\n", errors=0, warning=True))
    res = parse_pan(out)
    assert res.status == "incomplete"
    assert res.incomplete == "time"


def test_parse_pan_without_a_summary_is_never_ok():
    res = parse_pan("pan: elapsed time 0 seconds\n")
    assert res.status == "incomplete"
    assert res.incomplete == "unknown"


def test_parse_pan_error_count_without_a_known_message_is_still_an_error():
    res = parse_pan(pan_output("pan:1: something new (at depth 3)\n", errors=2, warning=True))
    assert res.status == "error"
    assert res.error == "other"


def test_parse_pan_reads_counts_printed_in_exponent_form():
    out = pan_output("Interrupted\n", errors=0, warning=True, states="1.2345678e+08",
                     transitions="2.3456789e+08")
    res = parse_pan(out)
    assert res.states == 123_456_780
    assert res.transitions == 234_567_890


# ---------------------------------------------------------------------------------------------
# Canned trail replay (spin -t -p -g -l -k m.pml.trail m.pml)

TRAIL = (
    'spin: warning, "m.pml" is newer than m.pml.trail\n'
    "  1:\tproc  2 (:init::1) m.pml:40 (state 1)\t[(run P0())]\n"
    "  2:\tproc  2 (:init::1) m.pml:41 (state 2)\t[(run P1())]\n"
    " 12:\tproc  0 (P0:1) m.pml:19 (state 13)\t[mb_p[0] = (mb_p[0]-1)]\n"
    "\t\tmb_p[0] = 1\n"
    "\t\tP0(0):sg = 1\n"
    "  13:\tproc  1 (P0:1) m.pml:20 (state 14)\t[mb_t[0] = (mb_t[0]+1)]\n"
    "\t\tmb_t[0] = 1\n"
    "\t\tmb_ph[0] = -3\n"
    " 14: proc 2 terminates\n"
    "spin: trail ends after 14 steps\n"
    "#processes: 3\n"
    "\t\tmb_p[0] = 0\n"
    "\t\tmb_t[0] = 1\n"
    " 14:\tproc  1 (P1:1) m.pml:31 (state 5)\n"
    " 14:\tproc  0 (P0:1) m.pml:25 (state 20) <valid end state>\n"
    " 14:\tproc  2 (:init::1) m.pml:44 (state 3) <valid end state>\n"
    "3 processes created\n"
)


def test_parse_trail_steps_globals_and_blocked_processes():
    res = RunResult(status="error", error="deadlock")
    parse_trail(TRAIL, res)
    assert [(s.depth, s.pid, s.proc, s.line) for s in res.steps] == [
        (1, 2, ":init:", 40), (2, 2, ":init:", 41), (12, 0, "P0", 19), (13, 1, "P0", 20)]
    # Global deltas carry the depth of the step they follow; the final section's come last.
    assert res.globals[:3] == [(12, "mb_p[0]", "1"), (13, "mb_t[0]", "1"), (13, "mb_ph[0]", "-3")]
    final = res.globals[3:]
    assert [(n, v) for _, n, v in final] == [("mb_p[0]", "0"), ("mb_t[0]", "1")]
    assert all(d > 14 for d, _, _ in final)
    # Local variables (-l) are not globals.
    assert all(not n.startswith("P0(") and n != "sg" for _, n, _ in res.globals)
    # Only the process without "<valid end state>" is blocked.
    assert res.blocked == [("P1", 31)]
    assert res.fail_line is None


# A step, then a failing assertion in process 1 at Promela line 27 (spin -t -p -g -l output).
ASSERT_TRAIL_HEAD = (
    "  1:\tproc  0 (P0:1) m.pml:12 (state 1)\t[mb_p[0] = 1]\n"
    "\t\tmb_p[0] = 1\n"
    "spin: m.pml:27, Error: assertion violated\n"
    "spin: text of failed assertion: assert(((a_1&42)==0))\n"
    "  2:\tproc  1 (P1:1) m.pml:27 (state 4)\t[assert(((a_1&42)==0))]\n"
)


def test_parse_trail_assertion_line_and_text():
    trail = (
        ASSERT_TRAIL_HEAD +
        "spin: trail ends after 2 steps\n"
        "#processes: 2\n"
        "  2:\tproc  1 (P1:1) m.pml:28 (state 5) <valid end state>\n"
        "  2:\tproc  0 (P0:1) m.pml:13 (state 2) <valid end state>\n"
        "2 processes created\n"
    )
    res = RunResult(status="error", error="assertion")
    parse_trail(trail, res)
    assert res.fail_line == 27
    assert res.assertion == "assert(((a_1&42)==0))"
    assert [(s.pid, s.line) for s in res.steps] == [(0, 12), (1, 27)]
    assert res.blocked == []


def test_parse_trail_ends_at_the_failing_assertion_inside_a_d_step():
    """The simulator finishes the d_step around a failing assertion (the next ops of the warp,
    packed with it) and prints those steps and values; pan stopped at the assertion."""
    trail = (
        ASSERT_TRAIL_HEAD +
        "  2:\tproc  1 (P1:1) m.pml:28 (state 5)\t[mb_p[0] = (mb_p[0]-1)]\n"
        "\t\tmb_p[0] = 0\n"
        "spin: trail ends after 2 steps\n"
        "#processes: 2\n"
        "2 processes created\n"
    )
    res = RunResult(status="error", error="assertion")
    parse_trail(trail, res)
    assert res.fail_line == 27
    assert [(s.pid, s.line) for s in res.steps] == [(0, 12), (1, 27)]
    assert [(d, name, v) for d, name, v in res.globals] == [(1, "mb_p[0]", "1")]


# ---------------------------------------------------------------------------------------------
# End to end on tiny hand-written models


@pytest.fixture(scope="module")
def tools(require_spin):
    return find_tools()


def _pan_pids() -> list:
    """`./pan` processes that are still children of this test process (running or unreaped)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                head, tail = fh.read().rsplit(")", 1)
            fields = tail.split()
            if int(fields[1]) != me:
                continue
            if fields[0] == "Z" and head.endswith("(pan"):  # unreaped: no cmdline left
                found.append(int(entry))
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0] == b"./pan":
            found.append(int(entry))
    return found


@pytest.fixture
def work_dirs(monkeypatch):
    """The private folders check_model creates (recorded, so other processes' runs do not matter)."""
    made = []
    real = tempfile.mkdtemp

    def mkdtemp(*a, **kw):
        d = real(*a, **kw)
        made.append(d)
        return d

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    return made


def _assert_private_and_removed(dirs):
    assert len(dirs) == 1, dirs
    d = dirs[0]
    assert os.path.basename(d).startswith("cutespin-")
    assert os.path.realpath(os.path.dirname(d)) == os.path.realpath(tempfile.gettempdir())
    assert not os.path.exists(d)


DEADLOCK_PML = textwrap.dedent("""\
    int x;
    active proctype A() { x = 1; (x == 2); x = 3 }
    active proctype B() { (x == 1); skip }
""")

ASSERT_PML = textwrap.dedent("""\
    int x;
    active proctype A() { x = 1; x = x + 1 }
    active proctype B() { assert(x != 1) }
""")

OK_PML = textwrap.dedent("""\
    int x;
    active proctype A() { x = 1; x = x + 1 }
    active proctype B() { (x == 2); assert(x == 2) }
""")

# About 9e8 reachable states with a bounded depth: far more than one second of search.
HUGE_PML = textwrap.dedent("""\
    int x; int y;
    active proctype A() { do :: x < 30000 -> x++ :: y < 30000 -> y++ :: else -> break od }
""")


def test_check_model_deadlock(tools):
    res = check_model(DEADLOCK_PML, tools, timeout=20)
    assert res.status == "error"
    assert res.error == "deadlock"
    # A blocks at `(x == 2)` on line 2; B ends validly.
    assert res.blocked == [("A", 2)]
    assert res.steps and all(s.line in (2, 3) for s in res.steps)
    assert any(n == "x" and v == "1" for _, n, v in res.globals)


def test_check_model_assertion(tools):
    res = check_model(ASSERT_PML, tools, timeout=20)
    assert res.status == "error"
    assert res.error == "assertion"
    assert res.fail_line == 3
    assert "x!=1" in res.assertion.replace(" ", "")
    assert res.steps[-1].proc == "B" and res.steps[-1].line == 3


def test_check_model_correct_model_is_ok(tools):
    res = check_model(OK_PML, tools, timeout=20)
    assert res.status == "ok", res.raw
    assert res.error is None and res.incomplete is None
    assert res.states > 0
    assert res.steps == [] and res.blocked == []


def wide_state_model(nbytes: int) -> str:
    """A correct model whose state vector is about `nbytes` bytes (one global byte array)."""
    return textwrap.dedent(f"""\
        byte wide[{nbytes}];
        active proctype A() {{ wide[0] = 1; wide[{nbytes - 1}] = wide[0] + 1 }}
        active proctype B() {{ (wide[{nbytes - 1}] == 2) }}
    """)


def compiles_of(monkeypatch) -> list:
    """The compiler commands check_model runs, recorded as it runs them."""
    from cutespin.engine import spin as spin_mod
    seen, real = [], spin_mod._run

    def recording(cmd, *args, **kwargs):
        if any(str(a).startswith("-DVECTORSZ=") for a in cmd):
            seen.append(cmd)
        return real(cmd, *args, **kwargs)
    monkeypatch.setattr(spin_mod, "_run", recording)
    return seen


def test_a_state_vector_of_tens_of_kilobytes_needs_one_build_of_pan(tools, monkeypatch):
    # cuDNN's frost kernels have states of 4 to 20 KB: built first for 2 or 4 KB, pan stopped at
    # once and was built again, and the second build used up their time bound.
    builds = compiles_of(monkeypatch)
    res = check_model(wide_state_model(20_000), tools, timeout=60)
    assert res.status == "ok", res.raw
    assert len(builds) == 1


def test_a_state_vector_larger_than_the_first_build_gets_a_second(tools, monkeypatch):
    builds = compiles_of(monkeypatch)
    res = check_model(wide_state_model(70_000), tools, timeout=60)
    assert res.status == "ok", res.raw
    assert len(builds) == 2


def test_check_model_timeout_is_incomplete_and_kills_pan(tools, work_dirs):
    t0 = time.monotonic()
    res = check_model(HUGE_PML, tools, timeout=1, depth=1_000_000)
    elapsed = time.monotonic() - t0
    assert res.status == "incomplete", res.raw[-500:]
    assert res.incomplete == "time"
    assert res.states > 0
    assert elapsed < 10
    assert "pan" in res.timings
    assert _pan_pids() == []
    _assert_private_and_removed(work_dirs)


def test_check_model_timeout_with_default_depth_is_never_ok(tools):
    res = check_model(HUGE_PML, tools, timeout=1)
    assert res.status == "incomplete"
    assert res.incomplete in ("time", "depth")
    assert _pan_pids() == []


def test_find_tools_missing_spin_says_how_to_install():
    with pytest.raises(ToolError) as ei:
        find_tools(spin="/nonexistent")
    msg = str(ei.value)
    assert "apt-get" in msg and "spin" in msg


def test_find_tools_missing_compiler_is_a_tool_error(require_spin):
    with pytest.raises(ToolError, match="compiler"):
        find_tools(compiler="/nonexistent/cc")


class _WatchedToken(CancelToken):
    """A CancelToken that reports when pan has started (no sleeping in the test)."""

    def __init__(self):
        super().__init__()
        self.pan_started = threading.Event()
        self.pan = None

    def register(self, p):
        super().register(p)
        if "./pan" in p.args:  # behind prlimit (the CPU cap) when it is installed
            self.pan = p
            self.pan_started.set()


def test_cancel_from_another_thread_stops_the_run(tools, work_dirs):
    token = _WatchedToken()

    def canceller():
        if token.pan_started.wait(30):
            token.cancel()

    th = threading.Thread(target=canceller)
    th.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            check_model(HUGE_PML, tools, timeout=60, depth=1_000_000, token=token)
    finally:
        token.cancel()
        th.join(5)
    assert time.monotonic() - t0 < 30
    assert token.pan is not None, "pan never started"
    assert token.pan.poll() is not None
    assert _pan_pids() == []
    _assert_private_and_removed(work_dirs)
    assert token._procs == []


def test_cancelled_token_refuses_to_start(tools):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        check_model(OK_PML, tools, timeout=20, token=token)


def test_gcc_builds_pan_unoptimised_and_agrees_with_tcc(tools):
    """Without tcc the engine builds pan with gcc -O0 (see compile_command); the verdicts,
    counts and trails are the compiler's business only in speed."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    gcc = find_tools(compiler="gcc")
    cmd = compile_command(gcc, 512, 2048)
    assert cmd[0] == gcc.compiler and cmd[1] == "-O0" and "-DSAFETY" in cmd and "-DMEMLIM=512" in cmd
    assert "-DNOCOMP" in cmd and "-DNOCOMP" in compile_command(tools, 512, 2048)
    if tools.compiler_name == "tcc":
        assert not [a for a in compile_command(tools, 512, 2048) if a.startswith("-O")]
    for pml in (DEADLOCK_PML, ASSERT_PML, OK_PML):
        a, b = check_model(pml, tools, timeout=20), check_model(pml, gcc, timeout=20)
        assert (a.status, a.error, a.states, a.blocked, a.fail_line) == (b.status, b.error, b.states, b.blocked,
                                                                          b.fail_line)
        assert [(s.proc, s.line) for s in a.steps] == [(s.proc, s.line) for s in b.steps]


def test_a_tool_past_the_time_bound_still_reports_its_time(tools):
    """A build cut short by the time bound is incomplete, and says where the time went."""
    res = check_model(OK_PML, tools, timeout=0.001)
    assert res.status == "incomplete" and res.incomplete == "time"
    assert "spin_a" in res.timings and res.timings["spin_a"] >= 0


# ---------------------------------------------------------------------------------------------
# pan's state hash: replaced by a word-at-a-time one (engine.with_word_hash)

# Two counters and an odd-sized array: a full search of about 10,000 states whose vector is not a
# whole number of 8-byte words (the hash's tail).
COUNTERS_PML = textwrap.dedent("""\
    byte x; byte y; byte pad[13];
    active proctype A() { do :: x < 40 -> x++; pad[x % 13] = x :: else -> break od }
    active proctype B() { do :: y < 40 -> y++ :: else -> break od; (x == 40) }
""")


def generated_pan_c(tools, pml: str, tmp_path) -> str:
    import subprocess
    (tmp_path / "m.pml").write_text(pml)
    subprocess.run([tools.spin, *tools.spin_args, "-a", "m.pml"], cwd=tmp_path, check=True, capture_output=True)
    return (tmp_path / "pan.c").read_text()


def test_the_word_hash_replaces_the_hash_spin_generates(tools, tmp_path):
    """The Debian SPIN's pan.c picks its hash where with_word_hash looks for it: if a new SPIN
    lays pan.c out differently, this fails instead of the engine silently losing its speed."""
    stock = generated_pan_c(tools, OK_PML, tmp_path)
    patched = with_word_hash(stock)
    assert "hasher = d_sfh;" in stock
    assert "hasher = d_sfh;" not in patched and "hasher = cutespin_word_hash;" in patched
    assert patched.count("cutespin_word_hash(uchar *s, int len)") == 1


def test_a_pan_c_laid_out_differently_keeps_its_own_hash():
    other = "#include <stdint.h>\nvoid init(void) { if (ssize <= 32) hasher = h32; else hasher = h64; }\n"
    assert with_word_hash(other) == other
    twice = "#include <stdint.h>\nhasher = d_sfh;\nhasher = d_sfh;\n"
    assert with_word_hash(twice) == twice


@pytest.mark.parametrize("pml", [COUNTERS_PML, DEADLOCK_PML, ASSERT_PML])
def test_the_word_hash_searches_the_same_states_as_spins_own(tools, monkeypatch, pml):
    from cutespin.engine import spin as spin_mod
    ours = check_model(pml, tools, timeout=30)
    monkeypatch.setattr(spin_mod, "with_word_hash", lambda text: text)
    stock = check_model(pml, tools, timeout=30)
    assert ours.states > 0
    assert (ours.status, ours.error, ours.states, ours.transitions, ours.depth) == \
        (stock.status, stock.error, stock.states, stock.transitions, stock.depth)
    assert [(s.proc, s.line) for s in ours.steps] == [(s.proc, s.line) for s in stock.steps]
