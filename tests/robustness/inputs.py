"""Hand-written bad and partial inputs, each with what must come out of it.

`expect` is one of:
- "finding:CODE"      the kernel gets that finding (e.g. CS301 for an init count above 2^20 - 1);
- "inconclusive"      the kernel is inconclusive, with a reason;
- "inconclusive:WORD" ... and the reason mentions WORD;
- "frontend:WORD"     the file is refused with one front-end error mentioning WORD;
- "nokernel"          nothing to check (the CLI skips it, the editor shows nothing);
- "any"               any verdict, as long as nothing crashes.
"""
from __future__ import annotations

from dataclasses import dataclass

from .mutate import SAMPLES, SMALL_KERNELS

RACE = (SAMPLES / "elected_handoff_race.py").read_text()
RING = (SAMPLES / "tma_ring_ok.py").read_text()
HANDOFF = SMALL_KERNELS["small_handoff"]
RING_SMALL = SMALL_KERNELS["small_ring"]


@dataclass
class Case:
    name: str
    text: object  # str, or bytes for what only a file on disk can hold
    expect: str
    lsp: bool = True  # also sent to the language server


def _kernel_body(body: str) -> str:
    """The small handoff kernel with `body` appended to the kernel (8 spaces of indent)."""
    return HANDOFF + "".join("        " + ln + "\n" for ln in body.splitlines())


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


CASES = [
    Case("syntax_error", _replace(RACE, "cute.arch.mbarrier_arrive(ready)", "cute.arch.mbarrier_arrive(ready"),
         "frontend:syntax error"),
    Case("half_written_kernel", RACE[:RACE.index("cute.arch.mbarrier_wait(ready, 0)") + 26], "frontend:syntax error"),
    Case("half_written_def", RACE[:RACE.index("def kernel(") + 20], "frontend:syntax error"),
    Case("half_typed_line", _replace(RACE, "cute.arch.mbarrier_wait(ready, 0)", "cute.arch.mbarrier_wa"), "any"),
    Case("unknown_dsl_calls", _kernel_body("cute.arch.frobnicate_barrier(bar)\ncute.arch.mbarrier_arrive_v9(bar, 1)\n"
                                           "p = pipeline.PipelineFancy.create(num_stages=2)\np.producer_acquire()"),
         "inconclusive:unmodeled"),
    Case("init_count_1e9", _replace(HANDOFF, "mbarrier_init(bar, 1)", "mbarrier_init(bar, 10**9)"), "finding:CS301"),
    Case("init_count_negative", _replace(HANDOFF, "mbarrier_init(bar, 1)", "mbarrier_init(bar, -1)"),
         "finding:CS301"),
    Case("arrive_count_negative", _replace(HANDOFF, "mbarrier_arrive(bar)", "mbarrier_arrive(bar, arrive_count=-5)"),
         "finding:CS301"),
    Case("arrive_count_2_31", _replace(HANDOFF, "mbarrier_arrive(bar)", "mbarrier_arrive(bar, arrive_count=2**31)"),
         "finding:CS301"),
    Case("stages_10000", _replace(RING, "self.stages = ", "self.stages = 10000  # "), "inconclusive"),
    # The default loop bound is capped (33 trips, not 129): checked, and verified within the
    # bound the time allows.
    Case("stages_64", _replace(RING, "self.stages = ", "self.stages = 64  # "), "nofinding"),
    Case("stages_10_9", _replace(RING_SMALL, "self.stages = 2", "self.stages = 10**9"), "inconclusive"),
    Case("stages_negative", _replace(RING_SMALL, "self.stages = 2", "self.stages = -3"), "any"),
    Case("loop_bound_from_nowhere", _replace(RING_SMALL, "cutlass.range(n_tiles)", "cutlass.range(undefined_name.x)"),
         "any"),
    Case("loop_range_10_12", _kernel_body("for i in range(10**12):\n    cute.arch.sync_threads()"),
         "inconclusive"),
    Case("tower_of_powers", _kernel_body("x = 10**10**8\ny = 1 << 10**10\nz = (1,) * 10**10\n"
                                         "for i in range(x):\n    cute.arch.sync_threads()"), "any"),
    Case("huge_literal", _kernel_body("x = " + "9" * 6000 + "\ncute.arch.mbarrier_init(bar, x)"), "any"),
    Case("named_barrier_10_12", _kernel_body("cute.arch.barrier(barrier_id=1, number_of_threads=10**12)"),
         "inconclusive:cannot hold"),
    Case("flag_value_10_30", SMALL_KERNELS["small_flag"].replace("atomic_add(flag, 1,", "atomic_add(flag, 10**30,"),
         "inconclusive:cannot hold"),
    Case("bulk_wait_negative", SMALL_KERNELS["small_tma_store"].replace("wait_group(0,", "wait_group(-5,"),
         "inconclusive:cp_async_bulk_wait_group"),
    Case("block_0", HANDOFF.replace("block=(64, 1, 1)", "block=(0, 1, 1)"), "inconclusive:block size"),
    Case("block_10_6", HANDOFF.replace("block=(64, 1, 1)", "block=(1000000, 1, 1)"), "inconclusive"),
    Case("cluster_10_6", SMALL_KERNELS["small_cluster"].replace("cluster=(2, 1, 1)", "cluster=(10**6, 1, 1)"),
         "inconclusive:cluster"),
    Case("bad_pins", HANDOFF.replace("    @cute.kernel\n", "    # cutespin: stages=-1 loop=abc block=0 cluster=x\n"
                                     "    @cute.kernel\n"), "any"),
    Case("while_true", _kernel_body("while True:\n    cute.arch.sync_threads()"), "inconclusive"),
    Case("self_recursion", HANDOFF.replace("    @cute.kernel\n", "    def spin_forever(self):\n"
                                           "        return self.spin_forever()\n\n    @cute.kernel\n")
         + "        self.spin_forever()\n", "any"),
    Case("deep_parentheses", _kernel_body("x = " + "(" * 100_000 + "1" + ")" * 100_000), "frontend:nests too deeply"),
    Case("deep_brackets", _kernel_body("x = " + "[" * 3000 + "1" + "]" * 3000), "frontend:nests too deeply"),
    Case("deep_calls", _kernel_body("x = " + "f(" * 3000 + "1" + ")" * 3000), "frontend:nests too deeply"),
    Case("deep_operators", _kernel_body("x = " + "+".join(["1"] * 60_000)), "frontend:nests too deeply"),
    Case("deep_unary", _kernel_body("x = " + "-" * 60_000 + "1"), "frontend:nests too deeply"),
    Case("deep_lambdas", _kernel_body("x = " + "lambda: " * 6000 + "1"), "frontend:nests too deeply"),
    Case("deep_subscripts", _kernel_body("x = bar" + "[0]" * 6000), "frontend:nests too deeply"),
    Case("deep_attributes", _kernel_body("x = bar" + ".a" * 60_000), "frontend:nests too deeply"),
    Case("deep_blocks", HANDOFF + "".join("        " + "    " * i + "if x:\n" for i in range(120))
         + "        " + "    " * 120 + "pass\n", "frontend:syntax error"),
    Case("nested_100_branches", HANDOFF + "".join("        " + "    " * i + "if warp == 0:\n" for i in range(90))
         + "        " + "    " * 90 + "cute.arch.sync_threads()\n", "any"),
    Case("huge_file", HANDOFF + "".join(f"def helper_{i}(a):\n    return a + {i}\n" for i in range(40_000)),
         "frontend:too large"),
    Case("long_line", _kernel_body("s = '" + "a" * 2_000_000 + "'"), "frontend:too large"),
    Case("many_kernels", "\n".join(HANDOFF.replace("class K", f"class K{i}") for i in range(25)), "any"),
    Case("non_utf8_comment", HANDOFF.encode().replace(b"import cutlass\n", b"import cutlass  # \xff\xfe\xc3\n", 1),
         "any", lsp=False),
    Case("non_utf8_code", HANDOFF.encode().replace(b"warp = cute", b"wa\xffrp = cute", 1), "frontend:syntax error",
         lsp=False),
    Case("latin1_file", ("# caf\xe9\n" + HANDOFF).encode("latin-1"), "any", lsp=False),
    Case("utf16_file", HANDOFF.encode("utf-16"), "any", lsp=False),
    Case("nul_byte", _replace(HANDOFF, "warp = cute", "warp\x00 = cute"), "frontend:syntax error"),
    Case("lone_surrogate", _replace(HANDOFF, "import cutlass\n", "import cutlass  # \udcff\n"),
         "frontend:not valid Unicode"),
    Case("bom_crlf", "\ufeff" + RACE.replace("\n", "\r\n"), "finding:CS201"),
    Case("cr_only", RACE.replace("\n", "\r"), "finding:CS201"),
    Case("form_feeds_and_separators", RACE.replace("\n\n", "\n\x0c\n").replace(
        "# One arrival per producer warp.", "# One arrival\u2028per\u2029producer \x1c warp."), "finding:CS201"),
    Case("tabs", RACE.replace("        ", "\t\t").replace("    ", "\t"), "finding:CS201"),
    Case("not_a_kernel", "import os\n\nprint('hello')\nx = [i for i in range(10)]\n", "nokernel"),
    Case("kernel_word_only", "# a kernel of truth\nkernel = 3\n", "nokernel"),
    Case("empty_file", "", "nokernel"),
    Case("binary_garbage", bytes(range(256)) * 8 + b"@cute.kernel\n", "any", lsp=False),
    Case("decorated_class", "import cutlass.cute as cute\n\n@cute.kernel\nclass NotAFunction:\n    pass\n", "any"),
    Case("kernel_outside_class", "import cutlass.cute as cute\n\n@cute.kernel\ndef k(x):\n"
         "    cute.arch.sync_threads()\n", "any"),
    Case("empty_kernel", "import cutlass.cute as cute\n\nclass K:\n    @cute.kernel\n    def kernel(self):\n"
         "        pass\n", "any"),
    Case("python_features_in_kernel", _kernel_body(
        "async def f():\n    await g()\nmatch warp:\n    case 0:\n        cute.arch.sync_threads()\n"
        "y = (z := 3)\ng = (i for i in range(3))\ntry:\n    cute.arch.sync_threads()\nexcept Exception:\n    pass\n"
        "with open('x') as fh:\n    pass\ndel y\nglobal q\nassert False\nyield 3\nraise SystemExit(4)"), "any"),
]
