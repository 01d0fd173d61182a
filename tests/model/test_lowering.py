"""Lowering: encodings, line table, memory-model policies (default vs strict), injection safety."""
import re
import textwrap

import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model.promela import lower

from ..kernels import kernel_source, line_of

SETUP = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=2)
tile = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, {count})
        cute.arch.mbarrier_init(bar + 1, {count2})
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
"""


def check(src, **kw):
    settings = Settings(verify_fixes=False, **kw)
    fr = api.check_source(src, "k.py", settings, with_fixes=False)
    assert fr.error is None
    assert len(fr.kernels) == 1
    return fr.kernels[0]


def handoff(count=1, count2=1, producer="", consumer=""):
    return kernel_source(SETUP.format(count=count, count2=count2) + f"""\
if warp_idx == 0:
{producer}
else:
{consumer}
""")


def test_every_op_line_maps_back_to_the_source_and_model_has_no_positions(require_spin):
    src = handoff(32, 1, "    tile[lane] = 1.0\n    cute.arch.mbarrier_arrive(bar)",
                  "    cute.arch.mbarrier_wait(bar, 0)\n    x = tile[lane]")
    k = build_models(src, "k.py", Settings())[0]
    pm = lower(k)
    spans = {info.span.line for info in pm.lines.values() if info.span}
    for needle in ("mbarrier_init(bar, 32)", "tile[lane] = 1.0", "mbarrier_arrive(bar)", "mbarrier_wait(bar, 0)",
                   "x = tile[lane]", "sync_threads()"):
        assert line_of(src, needle) in spans, needle
    # An edit above the kernel shifts source lines but not the model text.
    pm2 = lower(build_models("# a comment\n\n" + src, "k.py", Settings())[0])
    assert pm2.text == pm.text


def test_all_lanes_store_then_elected_arrive_is_a_race_and_sync_warp_fixes_it(require_spin):
    racy = handoff(1, 1, "    tile[lane] = 1.0\n    with cute.arch.elect_one():\n        cute.arch.mbarrier_arrive(bar)",
                   "    cute.arch.mbarrier_wait(bar, 0)\n    x = tile[lane]")
    kr = check(racy)
    assert kr.verdict == "counterexample"
    assert [(f.kind, f.span.line) for f in kr.findings] == [("race", line_of(racy, "x = tile[lane]"))]
    fixed = handoff(1, 1, "    tile[lane] = 1.0\n    cute.arch.sync_warp()\n    with cute.arch.elect_one():\n"
                          "        cute.arch.mbarrier_arrive(bar)",
                    "    cute.arch.mbarrier_wait(bar, 0)\n    x = tile[lane]")
    assert "sync_warp" in fixed
    assert check(fixed).verdict == "verified"


def test_named_barrier_cumulativity_lets_one_thread_publish_for_the_warps(require_spin):
    src = kernel_source(SETUP.format(count=1, count2=1) + """\
if warp_idx < 2:
    tile[lane] = 1.0
    cute.arch.barrier(barrier_id=1, number_of_threads=64)
    if warp_idx == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bar)
else:
    cute.arch.mbarrier_wait(bar, 0)
    x = tile[lane]
""", threads=96)
    assert check(src).verdict == "verified"


def test_wrong_parity_wait_deadlocks_with_barrier_state(require_spin):
    src = handoff(1, 1, "    with cute.arch.elect_one():\n        cute.arch.mbarrier_arrive(bar)",
                  "    cute.arch.mbarrier_wait(bar, 0)\n    cute.arch.mbarrier_wait(bar, 1)")
    kr = check(src)
    f = kr.findings[0]
    assert f.kind == "deadlock"
    assert f.span.line == line_of(src, "mbarrier_wait(bar, 1)")
    assert "pending 1" in f.message and "phase 1" in f.message
    assert any(r.message.startswith("blocked:") for r in f.related)


def test_over_arrival_is_an_overrun(require_spin):
    src = handoff(1, 1, "    cute.arch.mbarrier_arrive(bar)", "    cute.arch.mbarrier_wait(bar, 0)")
    kr = check(src)
    assert [f.kind for f in kr.findings] == ["overrun"]
    assert kr.findings[0].span.line == line_of(src, "mbarrier_arrive(bar)")


def test_double_initialisation_and_use_before_init_are_init_findings(require_spin):
    # Every warp's elected lane initialises the barrier, and warp 0 arrives on it before the CTA
    # barrier: warp 1's init can come after that arrival and wipe it.
    double = kernel_source("""\
bar = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_elems=1)
with cute.arch.elect_one():
    cute.arch.mbarrier_init(bar, 2)
if cute.arch.warp_idx() == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bar)
cute.arch.sync_threads()
""")
    kr = check(double)
    assert [(f.kind, f.span.line) for f in kr.findings] == [("init", line_of(double, "mbarrier_init(bar, 2)"))]
    assert "initialised twice" in kr.findings[0].message
    # The same inits with nothing between them and the CTA barrier write the same bytes.
    identical = double.replace("        if cute.arch.warp_idx() == 0:\n            with cute.arch.elect_one():\n"
                               "                cute.arch.mbarrier_arrive(bar)\n", "")
    assert "mbarrier_arrive" not in identical
    assert check(identical).verdict == "verified"
    early = kernel_source("""\
bar = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_elems=1)
warp_idx = cute.arch.warp_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
else:
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bar)
""")
    kr = check(early)
    assert [f.kind for f in kr.findings] == ["init"]
    assert kr.findings[0].span.line == line_of(early, "mbarrier_arrive(bar)")


STRICT_WAR = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
full = smem.allocate_array(cutlass.Int64, num_elems=1)
empty = smem.allocate_array(cutlass.Int64, num_elems=1)
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((32, 32)))
warp_idx = cute.arch.warp_idx()
lane = cute.arch.lane_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(full, 1)
        cute.arch.mbarrier_init(empty, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    phase = 1
    for k in cutlass.range_constexpr(2):
        cute.arch.mbarrier_wait(empty, phase)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(full, 2048)
        cute.copy(tma_atom, mA, sA, tma_bar_ptr=full)
        phase ^= 1
else:
    phase = 0
    for k in cutlass.range_constexpr(2):
        cute.arch.mbarrier_wait(full, phase)
        x = sA[lane, 0]
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(empty)
        phase ^= 1
""").replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom):")


def test_reads_released_by_an_elected_arrive_are_accepted_by_default_and_flagged_in_strict_mode(require_spin):
    assert check(STRICT_WAR).verdict == "verified"
    kr = check(STRICT_WAR, strict=True)
    assert kr.verdict == "counterexample"
    assert [f.kind for f in kr.findings] == ["race"]
    assert kr.findings[0].span.line == line_of(STRICT_WAR, "cute.copy(tma_atom")


def test_hostile_identifiers_and_strings_never_reach_promela():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
end_x = smem.allocate_array(cutlass.Int64, num_elems=1)
c_code = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
accept_label = cute.arch.warp_idx()
if accept_label == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(end_x, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if accept_label == 0:
    c_code[0] = 1.0
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(end_x)
else:
    cute.arch.mbarrier_wait(end_x, 0)
    cute.printf("#include <stdlib.h> c_code { system(0) }")
    y = c_code[0]
""")
    pm = lower(build_models(src, "k.py", Settings())[0])
    for word in ("end_x", "c_code", "accept_label", "#include", "system", "printf"):
        assert word not in pm.text
    assert re.findall(r"\bend\w*:", pm.text) == []  # no end labels in warp processes


def test_unmodeled_construct_makes_the_kernel_inconclusive_not_verified(require_spin):
    src = handoff(32, 1, "    tile[lane] = 1.0\n    cute.arch.mbarrier_arrive(bar)\n    cute.arch.some_new_barrier(bar)",
                  "    cute.arch.mbarrier_wait(bar, 0)\n    x = tile[lane]")
    kr = check(src)
    assert kr.verdict == "inconclusive"
    assert "cute.arch.some_new_barrier" in kr.reason
    assert [u.line for u in kr.unmodeled] == [line_of(src, "some_new_barrier")]


def test_time_bound_gives_inconclusive_never_verified(require_spin):
    # Eight warps hammering two barriers with a long loop: far more states than 0.2 s allows.
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.warp_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 224)
        cute.arch.mbarrier_init(bar + 1, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
phase = 0
for k in cutlass.range_constexpr(12):
    if warp_idx > 0:
        cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_wait(bar + 1, phase)
    else:
        cute.arch.mbarrier_wait(bar, phase)
        cute.arch.mbarrier_arrive(bar + 1)
    phase ^= 1
""", threads=256)
    kr = check(src, timeout=0.3)
    assert kr.verdict in ("inconclusive", "verified")
    if kr.verdict == "inconclusive":
        assert "bound" in kr.reason


TMA_STORE_FLAG = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
sC = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
lane = cute.arch.lane_idx()
bidx, _, _ = cute.arch.block_idx()
flag = mFlag.iterator
if bidx == 0:
    if cute.arch.warp_idx() == 0:
        sC[lane] = 1.0
        cute.arch.fence_view_async_shared()
        cute.arch.sync_warp()
        with cute.arch.elect_one():
            cute.copy(tma_atom, sC, mA)
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)
            cute.arch.red(flag, 1, op="add", dtype="s32", sem="release", scope="gpu")
else:
    if cute.arch.warp_idx() == 0:
        while cute.arch.load(flag, cutlass.Int32, sem="acquire", scope="gpu") < 1:
            pass
        x = mA[lane]
""", threads=32, pins="grid=2").replace(
    "def kernel(self, mA: cute.Tensor):",
    "def kernel(self, mA: cute.Tensor, mFlag: cute.Tensor, tma_atom: cute.CopyAtom):")


def test_tma_store_published_by_a_flag_needs_a_full_wait_and_async_global_fence(require_spin):
    kr = check(TMA_STORE_FLAG)
    assert [(f.kind, f.span.line) for f in kr.findings] == [("fence", line_of(TMA_STORE_FLAG, "x = mA[lane]"))]
    only_wait = TMA_STORE_FLAG.replace("cp_async_bulk_wait_group(0, read=True)", "cp_async_bulk_wait_group(0)")
    assert check(only_wait).verdict == "counterexample"
    fixed = only_wait.replace(
        "cute.arch.red(", 'cute.arch.fence_proxy("async.global")\n                cute.arch.red(')
    assert check(fixed).verdict == "verified"


def test_remote_arrive_on_a_barrier_whose_init_was_not_fenced_is_an_init_finding(require_spin):
    body = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
rank = cute.arch.block_idx_in_cluster()
warp_idx = cute.arch.warp_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
FENCE
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
if warp_idx == 0:
    with cute.arch.elect_one():
        if rank == 1:
            cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=0, scope="cluster")
        else:
            cute.arch.mbarrier_wait(bar, 0)
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""
    unfenced = kernel_source(body.replace("FENCE\n", ""), threads=32, cluster="(2, 1, 1)")
    kr = check(unfenced)
    assert [(f.kind, f.span.line) for f in kr.findings] == [("init", line_of(unfenced, "peer_cta_rank_in_cluster=0"))]
    fenced = kernel_source(body.replace("FENCE", "cute.arch.mbarrier_init_fence()"), threads=32, cluster="(2, 1, 1)")
    assert check(fenced).verdict == "verified"


def test_unfenced_init_gets_a_verified_init_fence_fix(require_spin):
    from cutespin.fixes.source import apply_edits
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
rank = cute.arch.block_idx_in_cluster()
warp_idx = cute.arch.warp_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
if warp_idx == 0:
    with cute.arch.elect_one():
        if rank == 1:
            cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=0, scope="cluster")
        else:
            cute.arch.mbarrier_wait(bar, 0)
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
""", threads=32, cluster="(2, 1, 1)")
    fr = api.check_source(src, "k.py", Settings())
    fix = fr.kernels[0].findings[0].fixes[0]
    assert fix.verified and "mbarrier_init_fence" in fix.edits[0].new_text
    assert fix.edits[0].span.line == line_of(src, "cute.arch.cluster_arrive_relaxed()")
    assert check(apply_edits(src, fix.edits)).verdict == "verified"


def test_repeated_access_is_dropped_only_when_it_updates_the_same_record():
    from cutespin import ir
    from cutespin.model.promela import _dedupe_accesses
    span = ir.Span(1, 1, 1, 2)
    r = ir.Region(0, "smem", 0, "sA")
    plain = ir.Access(span, r, True, 1)
    again = ir.Access(span, r, True, 1)
    through_view = ir.Access(span, r, True, 1, part="partition_D@12")
    assert _dedupe_accesses([plain, again]) == [plain]
    # A write through a per-thread partition view updates its own record: both stay.
    assert _dedupe_accesses([plain, through_view]) == [plain, through_view]


def test_a_repeat_within_a_run_of_accesses_is_dropped_and_a_barrier_ends_the_run():
    from cutespin import ir
    from cutespin.model.promela import _dedupe_accesses
    span = ir.Span(1, 1, 1, 2)
    sc, g = ir.Region(0, "smem", 0, "sc"), ir.Region(1, "gmem", -1, "global mX")
    load, store = ir.Access(span, g, False, 1), ir.Access(span, sc, True, 1)
    read_back = ir.Access(span, sc, False, 1)
    bar = ir.NamedBarrier(span, 0, None, 32, True, 1)
    # An unrolled staging loop: load, store, load, store, ... collapses to one of each.
    assert _dedupe_accesses([load, store] * 12) == [load, store]
    # A read of the same buffer is another record (kept); after a barrier the store counts again.
    assert _dedupe_accesses([store, read_back, store, bar, store]) == [store, read_back, bar, store]


def test_the_dropped_repeat_keeps_the_race_it_was_part_of(require_spin):
    # Every warp stores its element twice before the exchange; without the second barrier the
    # next round's stores race with the reads, and the first store of each run reports it.
    body = """\
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
tidx, _, _ = cute.arch.thread_idx()
for i in cutlass.range(mA.shape[0]):
    buf[tidx] = mA[tidx]
    buf[tidx] = buf[tidx] + mA[tidx + 64]
    cute.arch.sync_threads()
    mA[tidx] = buf[63 - tidx]
"""
    src = kernel_source(body, threads=64)
    r = check(src)
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201", r.reason
    assert r.findings[0].span.line in (line_of(src, "buf[tidx] = mA[tidx]"), line_of(src, "buf[63 - tidx]"))



# CTA 1 credits CTA 0's barrier with a CTA-scope remote arrive (narrow: it publishes nothing of
# CTA 1's to CTA 0); ROLES adds a race between two warps of one CTA on that CTA's own buffer.
NARROW_CREDIT = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
rank = cute.arch.block_idx_in_cluster()
warp_idx = cute.arch.warp_idx()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
ROLES
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""


def _narrow_credit_findings(roles: str) -> list:
    src = kernel_source(NARROW_CREDIT.replace("ROLES\n", textwrap.dedent(roles)), threads=64, cluster="(2, 1, 1)")
    kr = check(src)
    assert kr.verdict == "counterexample"
    return [f.code for f in kr.findings]


def test_a_narrow_remote_arrive_does_not_explain_a_race_inside_its_own_cta(require_spin):
    # The race is between CTA 1's own warps: no arrive on CTA 0's barrier could order it.
    assert _narrow_credit_findings("""\
        if rank == 1:
            if warp_idx == 0:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=0)
                x = buf[0]
            else:
                buf[0] = 1.0
        else:
            if warp_idx == 0:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_wait(bar, 0)
        """) == ["CS201"]


def test_a_narrow_remote_arrive_does_not_explain_a_race_on_a_buffer_its_cta_never_touches(require_spin):
    # CTA 0 waits on the credit, then races between its own warps on its own buffer, which CTA 1
    # never accesses: no release from CTA 1 was missing, the race is a plain one.
    assert _narrow_credit_findings("""\
        if rank == 1:
            if warp_idx == 0:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=0)
        else:
            if warp_idx == 0:
                cute.arch.mbarrier_wait(bar, 0)
                x = buf[0]
            else:
                buf[0] = 1.0
        """) == ["CS201"]
