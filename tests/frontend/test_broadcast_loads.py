"""A value broadcast through one shared-memory element (`s_bcast[0]` written by thread 0 after a
block reduction, read by every thread after a barrier) is the same in every warp that reads it
at the same place and time (P14): a branch on it is taken alike by the whole CTA (cudnn's
DeepSeek top-k stage 2 branches on `row_max == neg_inf` with `neg_inf = -Float32.inf`)."""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of


def body(read: str) -> str:
    return f"""\
smem = cutlass.utils.SmemAllocator()
s_bcast = smem.allocate_tensor(cutlass.Float32, cute.make_layout(1))
s_part = smem.allocate_tensor(cutlass.Float32, cute.make_layout(2))
tidx, _, _ = cute.arch.thread_idx()
warp_id = tidx // 32
neg_inf = -cutlass.Float32.inf
if tidx % 32 == 0:
    s_part[warp_id] = mA[warp_id]
if tidx == 0:
    s_bcast[0] = mA[2]
cute.arch.barrier()
row_max = {read}
if row_max == neg_inf:
    cute.arch.barrier()
    again = s_bcast[0]
else:
    cute.arch.barrier()
    if tidx == 0:
        s_bcast[0] = mA[3]
"""


def check(src: str):
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    return kr.verdict, [(f.code, f.span.line) for f in kr.findings]


def test_a_branch_on_a_broadcast_value_is_taken_alike_by_every_warp():
    verdict, found = check(kernel_source(body("s_bcast[0]")))
    assert verdict == "verified", found


def test_a_branch_on_a_per_warp_value_may_diverge():
    # Each warp reads its own partial: warps may take different sides, and the `else` side's
    # write after the (shared) barrier races with the `if` side's read.
    src = kernel_source(body("s_part[warp_id]"))
    verdict, found = check(src)
    assert verdict == "counterexample"
    assert found and found[0][0] == "CS201"
    assert {line for _, line in found} & {line_of(src, "again = s_bcast[0]"), line_of(src, "s_bcast[0] = mA[3]")}


def test_the_verdict_states_the_broadcast_assumption():
    src = kernel_source(body("s_bcast[0]"))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    line = line_of(src, "if row_max == neg_inf")
    assert any(a.startswith(f"line {line}: the branch reads a value every thread loads") for a in kr.assumptions), \
        kr.assumptions


def pointer_body(offset: str) -> str:
    """The same through a raw pointer into a rank-1 array (cuDNN frost's steep-channel ballots:
    `(words_ptr + 1).load()`); the `else` side rewrites the word the `if` side reads again."""
    return f"""\
words = cutlass.Array(cutlass.Int32, 4, space=cutlass.AddressSpace.smem)
tidx, _, _ = cute.arch.thread_idx()
warp_id = tidx // 32
if tidx % 32 == 0:
    (words.data_ptr() + warp_id).store(mA[warp_id])
cute.arch.barrier()
mask = (words.data_ptr() + {offset}).load()
if mask != 0:
    cute.arch.barrier()
    again = (words.data_ptr() + 1).load()
else:
    cute.arch.barrier()
    if tidx == 0:
        (words.data_ptr() + 1).store(mA[3])
"""


def test_a_branch_on_a_word_loaded_through_a_pointer_is_taken_alike_by_every_warp():
    verdict, found = check(kernel_source(pointer_body("1")))
    assert verdict == "verified", found


def test_a_branch_on_a_word_at_a_per_warp_pointer_may_diverge():
    src = kernel_source(pointer_body("warp_id"))
    verdict, found = check(src)
    assert verdict == "counterexample", found
    assert found and found[0][0] == "CS201"


def long_condition_body(rounds: int) -> str:
    """A uniform condition whose term passes the size limit (MAX_TERM_SIZE) while each of its two
    comparisons stays under it (cuDNN's block-sparse backward: `iter_count > 0 and kv_block * n <
    seqlen_k`, its block coordinates a select): it keeps a digest term, so the warps still agree."""
    return f"""\
smem = cutlass.utils.SmemAllocator()
s_val = smem.allocate_tensor(cutlass.Float32, cute.make_layout(1))
tidx, _, _ = cute.arch.thread_idx()
a = mA.shape[0]
b = mA.shape[1]
for i in cutlass.range_constexpr({rounds}):
    a = a + mA.shape[2]
    b = b + mA.shape[3]
if a > 0 and b > 0:
    cute.arch.barrier()
    again = s_val[0]
else:
    cute.arch.barrier()
    if tidx == 0:
        s_val[0] = mA[3]
"""


def test_a_uniform_condition_past_the_term_size_limit_is_taken_alike_by_every_warp():
    from cutespin.frontend import interp
    rounds = interp.MAX_TERM_SIZE // 8 + 2  # 4 a round: each comparison a little over half the limit
    verdict, found = check(kernel_source(long_condition_body(rounds)))
    assert verdict == "verified", found


def test_a_condition_set_on_a_host_choice_past_the_size_limit_is_taken_alike_by_every_warp():
    # `c = a > 0`, and `c = b > 0` where the host chose so: a select of two comparisons, each
    # under the size limit, together over it.
    from cutespin.frontend import interp
    rounds = interp.MAX_TERM_SIZE * 3 // 16
    body = long_condition_body(rounds).replace(
        "if a > 0 and b > 0:", "c = a > 0\nif cutlass.const_expr(self.use_b):\n    c = b > 0\nif c:")
    src = kernel_source(body, init="self.use_b = use_b_from_host()")
    verdict, found = check(src)
    assert verdict == "verified", found
