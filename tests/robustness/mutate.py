"""Source mutations for the robustness fuzzer, and how a mutant's outcome is classified.

A mutation *plan* is a short list of `(operator, a, b)` triples of plain integers: `operator`
picks one of `OPERATORS`, `a` and `b` pick where and what (taken modulo the number of choices the
current text offers). Plans are what hypothesis generates and shrinks; `apply_plan` is
deterministic, so a plan and its base file reproduce a mutant exactly.

Operators work on tokens (`tokenize`) when the text still tokenizes and on lines otherwise, so a
mutant that an earlier step already broke keeps being mutated: numbers swapped for edge values,
names swapped with other names of the file (barriers, parities, warps), DSL calls swapped or made
unknown, operators and keywords changed, lines deleted, duplicated, swapped, re-indented,
wrapped in loops and branches, the file cut short (a half-written kernel) or spliced with noise.
"""
from __future__ import annotations

import io
import keyword
import re
import textwrap
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"

# ------------------------------------------------------------------------------------ base files

_HEADER = """\
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync
"""


def _kernel(body: str, *, threads: int = 64, cluster: str = "", init: str = "self.stages = 2",
            params: str = "") -> str:
    cluster_arg = f", cluster={cluster}" if cluster else ""
    return (_HEADER + "\n\nclass K:\n    def __init__(self):\n" + textwrap.indent(textwrap.dedent(init), " " * 8)
            + "\n\n    @cute.jit\n    def __call__(self, mA: cute.Tensor, flag: cute.Tensor):\n"
            + f"        self.kernel(mA, flag).launch(grid=(2, 1, 1), block=({threads}, 1, 1){cluster_arg})\n\n"
            + "    @cute.kernel\n    def kernel(self, mA: cute.Tensor, flag: cute.Tensor" + params + "):\n"
            + textwrap.indent(textwrap.dedent(body), " " * 8))


SMALL_KERNELS = {
    "small_handoff": _kernel("""\
        warp = cute.arch.warp_idx()
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp == 0:
            buf[lane] = 1.0
            cute.arch.sync_warp()
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(bar)
        else:
            cute.arch.mbarrier_wait(bar, 0)
            x = buf[31 - lane]
    """),
    "small_ring": _kernel("""\
        warp = cute.arch.warp_idx()
        smem = cutlass.utils.SmemAllocator()
        full = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        empty = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        if warp == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(self.stages):
                    cute.arch.mbarrier_init(full + s, 1)
                    cute.arch.mbarrier_init(empty + s, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        stage = 0
        phase = 0
        for k in cutlass.range(n_tiles):
            if warp == 0:
                cute.arch.mbarrier_wait(empty + stage, phase ^ 1)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(full + stage)
            else:
                cute.arch.mbarrier_wait(full + stage, phase)
                cute.arch.mbarrier_arrive(empty + stage)
            stage = stage + 1
            if stage == self.stages:
                stage = 0
                phase ^= 1
    """, params=", n_tiles: cutlass.Int32"),
    "small_named": _kernel("""\
        warp = cute.arch.warp_idx()
        if warp < 2:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
        else:
            cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
        cute.arch.sync_threads()
    """, threads=128),
    "small_cluster": _kernel("""\
        rank = cute.arch.block_idx_in_cluster()
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
        if cute.arch.warp_idx() == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=1 - rank)
            cute.arch.mbarrier_wait(bar, 0)
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
    """, threads=32, cluster="(2, 1, 1)"),
    "small_flag": _kernel("""\
        bidx, _, _ = cute.arch.block_idx()
        if bidx == 0:
            mA[0] = 1.0
            cute.arch.fence_acq_rel_gpu()
            cute.arch.atomic_add(flag, 1, sem="release", scope="gpu")
        else:
            while cute.arch.load(flag, sem="acquire", scope="gpu") < 1:
                pass
            x = mA[0]
    """, threads=32),
    "small_tma_store": _kernel("""\
        warp = cute.arch.warp_idx()
        smem = cutlass.utils.SmemAllocator()
        sOut = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=128)
        sOut[cute.arch.lane_idx()] = 2.0
        cute.arch.fence_view_async_shared()
        cute.arch.sync_threads()
        if warp == 0:
            cute.copy(tma_atom, sOut, mA)
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)
        cute.arch.sync_threads()
    """, params=", tma_atom: cute.CopyAtom"),
}


def bases() -> dict:
    """name -> source: every sample and the small kernels above."""
    out = {p.name: p.read_text() for p in sorted(SAMPLES.glob("*.py"))}
    out.update({f"{k}.py": v for k, v in SMALL_KERNELS.items()})
    return out


# ------------------------------------------------------------------------------------- operators

EDGE_NUMBERS = ["0", "1", "-1", "2", "3", "7", "31", "32", "33", "63", "64", "96", "127", "128", "255", "256",
                "1023", "1024", "4096", "10000", "1048575", "1048576", "2147483647", "2147483648",
                "4294967296", "-2147483648", "10**9", "10**12", "2**40", "10**10**8", "1 << 10**10",
                "9" * 5000, "0x" + "f" * 64, "1.5", "0.0", "1e308", "True", "False", "None", "(1, 2)", "'4'"]

DSL_CALLS = [
    "mbarrier_init", "mbarrier_init_fence", "mbarrier_arrive", "mbarrier_arrive_and_expect_tx",
    "mbarrier_expect_tx", "mbarrier_wait", "mbarrier_try_wait", "sync_threads", "sync_warp", "barrier",
    "barrier_arrive", "cluster_arrive", "cluster_arrive_relaxed", "cluster_wait", "elect_one",
    "fence_view_async_shared", "fence_proxy", "fence_acq_rel_cta", "fence_acq_rel_gpu", "fence_acq_rel_cluster",
    "atomic_add", "atomic_exch", "red", "load", "store", "cp_async_bulk_commit_group",
    "cp_async_bulk_wait_group", "warp_idx", "lane_idx", "thread_idx", "block_idx", "block_idx_in_cluster",
    "map_dsmem_ptr", "mbarrier_conditional_try_wait", "frobnicate_barrier", "sync_grid", "__import__",
]
OPERATOR_TOKENS = ["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "//", "%", "^", "&", "|", "<<", ">>", "**"]
KEYWORD_SWAPS = {"if": "while", "while": "if", "True": "False", "False": "True", "and": "or", "or": "and",
                 "else": "elif True", "for": "async for", "with": "async with", "not": ""}
WRAPPERS = ["if warp_idx == 0:", "if cute.arch.lane_idx() < 16:", "for _i in range(3):",
            "for _i in cutlass.range(n_unknown):", "with cute.arch.elect_one():", "while flag_unknown:",
            "if True:", "if False:", "try:"]
NOISE = ["(", ")", ":", "\t", "\\", "'''", "#", "@cute.kernel\n", "def", "lambda: ", "\x00", "\ufeff", "é",
         "\u2028", "    ", "\n" * 3, "`", "$", "yield ", "await ", "return ", "raise ", "global x\n",
         "cute.arch.", "self.", "**kwargs", "*args, "]


def _tokens(text: str):
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError, ValueError):
        return None


def _offsets(text: str) -> list:
    starts, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _replace_token(text: str, tok, new: str) -> str:
    starts = _offsets(text)
    (sl, sc), (el, ec) = tok.start, tok.end
    if sl - 1 >= len(starts) or el - 1 >= len(starts):
        return text
    a, b = starts[sl - 1] + sc, starts[el - 1] + ec
    return text[:a] + new + text[b:]


def _pick(seq, i):
    return seq[i % len(seq)] if seq else None


def _lines(text: str) -> list:
    return text.splitlines(keepends=True)


def op_number(text, a, b):
    toks = [t for t in (_tokens(text) or []) if t.type == tokenize.NUMBER]
    tok = _pick(toks, a)
    if tok is None:
        return op_noise(text, a, b)
    try:
        n = int(tok.string.replace("_", ""), 0)
        relative = [str(n + 1), str(n - 1), str(n * 2), str(n // 2), str(-n), str(n * 32), str(n ^ 1)]
    except ValueError:
        relative = []
    return _replace_token(text, tok, _pick(EDGE_NUMBERS + relative, b))


def op_name(text, a, b):
    """Swap a name for another name of the file (wrong barrier, wrong parity variable, wrong
    warp), or for a name nothing defines."""
    toks = [t for t in (_tokens(text) or []) if t.type == tokenize.NAME and not keyword.iskeyword(t.string)]
    tok = _pick(toks, a)
    if tok is None:
        return op_line_delete(text, a, b)
    names = sorted({t.string for t in toks}) + ["undefined_name", "self", "cute", "__builtins__", "_"]
    return _replace_token(text, tok, _pick(names, b))


def op_dsl_call(text, a, b):
    sites = [m for m in re.finditer(r"\b(?:cute\.arch|arch|cute)\.(\w+)\s*\(", text)]
    m = _pick(sites, a)
    if m is None:
        return op_name(text, a, b)
    return text[:m.start(1)] + _pick(DSL_CALLS, b) + text[m.end(1):]


def op_args(text, a, b):
    """Drop, add or duplicate a call argument (arity and keyword mistakes)."""
    sites = [m for m in re.finditer(r"\(([^()\n]*)\)", text)]
    m = _pick(sites, a)
    if m is None:
        return op_noise(text, a, b)
    args = [x for x in m.group(1).split(",")]
    choice = b % 5
    if choice == 0 and args:
        args.pop(b % len(args))
    elif choice == 1:
        args.append(" 1")
    elif choice == 2 and args:
        args.append(args[b % len(args)])
    elif choice == 3:
        args.append(" phase=1")
    else:
        args = [" " + _pick(EDGE_NUMBERS, b)] + args[1:]
    return text[:m.start(1)] + ",".join(args).strip() + text[m.end(1):]


def op_operator(text, a, b):
    toks = [t for t in (_tokens(text) or []) if t.type == tokenize.OP and t.string in OPERATOR_TOKENS + ["^=", "+="]]
    tok = _pick(toks, a)
    if tok is None:
        return op_noise(text, a, b)
    return _replace_token(text, tok, _pick(OPERATOR_TOKENS, b))


def op_keyword(text, a, b):
    toks = [t for t in (_tokens(text) or []) if t.type == tokenize.NAME and t.string in KEYWORD_SWAPS]
    tok = _pick(toks, a)
    if tok is None:
        return op_line_swap(text, a, b)
    return _replace_token(text, tok, KEYWORD_SWAPS[tok.string])


def op_line_delete(text, a, b):
    lines = _lines(text)
    if not lines:
        return text
    i = a % len(lines)
    n = 1 + b % 3
    return "".join(lines[:i] + lines[i + n:])


def op_line_duplicate(text, a, b):
    lines = _lines(text)
    if not lines:
        return text
    i = a % len(lines)
    times = 1 + b % 3
    return "".join(lines[:i + 1] + [lines[i]] * times + lines[i + 1:])


def op_line_swap(text, a, b):
    lines = _lines(text)
    if len(lines) < 2:
        return text
    i = a % (len(lines) - 1)
    j = min(len(lines) - 1, i + 1 + b % 3)
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def op_indent(text, a, b):
    lines = _lines(text)
    if not lines:
        return text
    i = a % len(lines)
    if b % 2:
        lines[i] = "    " + lines[i]
    else:
        lines[i] = lines[i][4:] if lines[i].startswith("    ") else lines[i].lstrip()
    return "".join(lines)


def op_wrap(text, a, b):
    """Wrap a line (and the block under it, by indentation) in a branch, loop or `with`."""
    lines = _lines(text)
    body = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")]
    i = _pick(body, a)
    if i is None:
        return text
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > len(indent)):
        j += 1
    wrapped = [indent + _pick(WRAPPERS, b) + "\n"] + ["    " + ln if ln.strip() else ln for ln in lines[i:j]]
    if wrapped[0].strip() == "try:":
        wrapped.append(indent + "except Exception:\n" + indent + "    pass\n")
    return "".join(lines[:i] + wrapped + lines[j:])


def op_nest(text, a, b):
    """Deeply nested code: a line wrapped in many branches, or a deeply parenthesised value."""
    lines = _lines(text)
    body = [i for i, ln in enumerate(lines) if ln.strip().startswith(("cute.", "if ", "x ="))]
    i = _pick(body, a)
    if i is None:
        return text
    depth = 10 + b % 90
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    if b % 2:
        nested = "".join(indent + "    " * k + "if warp_idx == 0:\n" for k in range(depth))
        return "".join(lines[:i]) + nested + indent + "    " * depth + lines[i].lstrip() + "".join(lines[i + 1:])
    expr = "(" * depth + "1" + ")" * depth
    return "".join(lines[:i]) + indent + f"x = {expr}\n" + "".join(lines[i:])


def op_truncate(text, a, b):
    """A half-written file: cut anywhere (mid-token too)."""
    if not text:
        return text
    return text[:a % len(text)]


def op_noise(text, a, b):
    if not text:
        return _pick(NOISE, b)
    i = a % len(text)
    return text[:i] + _pick(NOISE, b) + text[i:]


OPERATORS = [op_number, op_number, op_name, op_dsl_call, op_args, op_operator, op_keyword, op_line_delete,
             op_line_duplicate, op_line_swap, op_indent, op_wrap, op_nest, op_truncate, op_noise]


def apply_plan(text: str, plan) -> str:
    for op, a, b in plan:
        text = OPERATORS[op % len(OPERATORS)](text, a, b)
    return text


def describe(plan) -> str:
    return ", ".join(f"{OPERATORS[op % len(OPERATORS)].__name__[3:]}({a},{b})" for op, a, b in plan)


# ------------------------------------------------------------------------------------ outcomes

#: How a mutant can legitimately end. Anything else is a crash.
CLASSES = (
    "syntax-error",  # FrontendError: the parser rejects the text (one diagnostic)
    "no-kernel",  # parses, has no kernel left
    "static-finding",  # a finding without search (e.g. an init count outside 1..2^20-1)
    "unmodeled",  # a construct the front end does not model: inconclusive
    "model-limit",  # too large / a value Promela cannot hold: inconclusive with the reason
    "no-sync",  # a kernel without synchronization
    "lowered",  # a Promela model ready for SPIN
)


def classify_frontend(text: str, settings) -> list:
    """Run the front end and the lowering on one mutant. Returns one class per kernel (or one for
    the file). Raises whatever the checker raises that is not an expected outcome: a crash."""
    from cutespin.frontend import FrontendError, build_models
    from cutespin.model import promela

    limits = tuple(getattr(promela, n) for n in ("TooManyGroups", "ModelTooLarge", "ValueOutOfRange")
                   if hasattr(promela, n))
    try:
        models = build_models(text, "mutant.py", settings)
    except FrontendError:
        return ["syntax-error"]
    if not models:
        return ["no-kernel"]
    out = []
    for k in models:
        try:
            pm = promela.lower(k)
        except limits:
            out.append("model-limit")
            continue
        assert_promela_is_generated_only(pm.text, text)
        if k.static_findings:
            out.append("static-finding")
        elif k.unmodeled:
            out.append("unmodeled")
        elif not k.processes:
            out.append("no-sync")
        else:
            out.append("lowered")
    return out


# Every word the lowering may write (`model/promela.py` generates all names: `mb_p`, `c3_1`,
# `br0_2`, `a_4p1w1` (partition 1, bit word 1), `P0`, `wgc4` (warp 4's wgmma groups), ...).
# A user identifier reaching the model shows up as a word outside this set;
# e.g. `end_x` would become an end label and hide a deadlock, `accept_y` / `progress_z` would
# change what SPIN checks.
PROMELA_KEYWORDS = {"active", "proctype", "init", "run", "int", "byte", "bit", "bool", "atomic", "d_step", "if",
                    "fi", "do", "od", "else", "skip", "break", "assert", "true", "false", "unsigned", "short"}
GENERATED_NAME = re.compile(
    r"^(?:mb_p|mb_t|mb_ph|mb_in|mb_e|ex|dead|kn|kg|kx|nn|ng|fv|cfg|uc|ue|sg|cg|Tma|end_tma|P\d+|tq\d+|"
    r"wgc\d+|wgx\d+|lr\d+_\d+|"
    r"(?:[atu]_|c\d+_|an_|ar_|ap\d+_|(?:br|bd|na|nd|ka|kd|fr)\d+_)\d+(?:p\d+)?(?:w\d+)?)$")
HEADER_COMMENT = "/* cutespin model: generated, position-free */"


def promela_words(text: str) -> set:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def assert_promela_is_generated_only(pml: str, source: str = "") -> None:
    """No identifier, string or comment of the source reaches the Promela text: the only comment
    is the fixed header, every word is a Promela keyword or a generated name, and there is no
    string, preprocessor line or embedded C (`c_code`, `#include`)."""
    body = pml.replace(HEADER_COMMENT, "", 1)
    for bad in ("/*", "*/", "//", '"', "'", "#", "\\", "`", "$"):
        if bad in body:
            raise AssertionError(f"{bad!r} in the Promela model")
    strange = sorted(w for w in promela_words(body) if w not in PROMELA_KEYWORDS and not GENERATED_NAME.match(w))
    if strange:
        raise AssertionError(f"words in the Promela model that the lowering does not generate: {strange[:10]}")
    numbers = [int(n) for n in re.findall(r"\b\d+\b", body)]
    if numbers and max(numbers) > (1 << 31) - 1:
        raise AssertionError(f"a number beyond a 32-bit int in the Promela model: {max(numbers)}")
    labels = re.findall(r"^\s*(\w+)\s*:(?!:)", body, re.M)
    if [lb for lb in labels if lb != "end_tma"]:
        raise AssertionError(f"labels in the Promela model: {labels}")
