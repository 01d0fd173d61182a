"""Identical warps are checked as two (model/symmetry.py): the states of N warps between two
barriers grow as 2^N, and two members show every interaction between members. The verdict
states the bound; warps that signal counted barriers are never left out."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model import symmetry

from ..kernels import kernel_source, line_of

# Every warp stages its values, syncs and reads a neighbour's: the reduction of a norm kernel.
EXCHANGE = """\
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(256))
tidx, _, _ = cute.arch.thread_idx()
n = mA.shape[0]
for i in cutlass.range(n):
    buf[tidx] = mA[tidx]
    {barrier}
    mA[tidx] = buf[255 - tidx]
    {barrier}
"""

SYNC = "cute.arch.sync_threads()"


def source(body: str = EXCHANGE, barrier: str = SYNC, threads: int = 256) -> str:
    return kernel_source(body.format(barrier=barrier), threads=threads)


def check(src: str):
    return api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]


def model(src: str) -> ir.KernelModel:
    return build_models(src, "k.py", Settings())[0]


def test_eight_identical_warps_are_one_family_checked_as_two():
    k = model(source())
    # An index every warp shares makes the warps identical.
    same = model(source(EXCHANGE.replace("buf[tidx] = mA[tidx]", "buf[0] = mA[tidx]")
                        .replace("buf[255 - tidx]", "buf[1]")))
    (fam,) = symmetry.families(same)
    assert fam.warps == tuple(range(8)) and fam.kept == (0, 1)
    reduced = symmetry.reduce_identical_warps(same)
    assert [p.warp for p in reduced.processes] == [0, 1]
    assert reduced.bounds["identical_warps"] == [{"cta": 0, "warps": list(range(8)), "kept": [0, 1]}]
    assert any("identical warps are checked as 2" in a and "warps 0–7" in a for a in reduced.assumptions)
    # Warps touching elements of their own (buf[0:32], buf[32:64], ...) are not merged.
    assert symmetry.families(k) == []
    assert symmetry.reduce_identical_warps(k) is k


def test_the_verdict_names_the_bound(require_spin):
    shared = EXCHANGE.replace("buf[tidx] = mA[tidx]", "if tidx % 32 == 0:\n        buf[0] = mA[tidx]") \
        .replace("buf[255 - tidx]", "buf[0]")
    ok = check(source(shared))
    assert ok.verdict == "verified", ok.reason
    assert ok.bounds["identical_warps"][0]["kept"] == [0, 1]
    assert "2 of 8 identical warps" in api.verified_bounds(ok.bounds)
    # Without the second barrier, lane 0 of one warp overwrites buf[0] while another warp still
    # reads it: two members race, and two are all it takes.
    racy = source(shared.replace("    {barrier}\n", "", 1).replace("mA[tidx] = buf[0]\n    {barrier}",
                                                                     "mA[tidx] = buf[0]"))
    src = racy.replace("{barrier}", SYNC)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    assert r.findings[0].code == "CS201"
    assert r.findings[0].span.line in (line_of(src, "buf[0] = mA[tidx]"), line_of(src, "mA[tidx] = buf[0]"))


def test_a_barrier_skipped_by_some_warps_still_deadlocks(require_spin):
    # A per-thread condition: each warp may take either side, so two members suffice to
    # disagree at the barrier (whose count, all 256 threads, is lowered to the two kept).
    body = """\
tidx, _, _ = cute.arch.thread_idx()
if mA[tidx] > 0:
    cute.arch.barrier(barrier_id=1, number_of_threads=256)
"""
    k = model(kernel_source(body, threads=256))
    assert [len(f.warps) for f in symmetry.families(k)] == [8]
    r = check(kernel_source(body, threads=256))
    assert r.verdict == "counterexample" and r.findings[0].code == "CS101", r.reason


def test_an_explicit_count_of_every_user_is_lowered_with_the_users():
    body = """\
tidx, _, _ = cute.arch.thread_idx()
x = mA[tidx]
cute.arch.barrier(barrier_id=1, number_of_threads=256)
"""
    reduced = symmetry.reduce_identical_warps(model(kernel_source(body, threads=256)))
    counts = {op.threads for p in reduced.processes for op in p.variants[0] if isinstance(op, ir.NamedBarrier)}
    assert counts == {64}


def test_a_barrier_for_some_of_its_users_keeps_every_user():
    # 128 of the 256 threads complete each phase: leaving warps out would change which phase
    # each warp joins, so no warp is left out.
    body = """\
tidx, _, _ = cute.arch.thread_idx()
cute.arch.barrier(barrier_id=1, number_of_threads=128)
"""
    k = model(kernel_source(body, threads=256))
    assert symmetry.families(k) == []
    assert symmetry.reduce_identical_warps(k) is k


# Every warp arrives once (one elected lane) on a barrier warp 0 initialised for all eight.
ARRIVE_ALL = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, 1)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, {count})
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
with cute.arch.elect_one():
    cute.arch.mbarrier_arrive(bar)
cute.arch.mbarrier_wait(bar, 0)
"""


def test_an_mbarrier_count_of_every_arriver_is_lowered_with_the_arrivers(require_spin):
    k = model(kernel_source(ARRIVE_ALL.format(count=8), threads=256))
    assert not k.unmodeled, k.unmodeled
    # Warp 0 initialises (never left out); warps 1-7 arrive once each and wait alike.
    (fam,) = symmetry.families(k)
    assert fam.warps == tuple(range(1, 8)) and fam.kept == (1, 2)
    reduced = symmetry.reduce_identical_warps(k)
    inits = {op.count for p in reduced.processes for op in ir.walk(p.variants[0]) if isinstance(op, ir.MbInit)}
    assert inits == {3}  # 8 arrivals less the 5 of the warps left out
    assert any("the arrival count of" in a and "lowered to 3" in a for a in reduced.assumptions)
    r = check(kernel_source(ARRIVE_ALL.format(count=8), threads=256))
    assert r.verdict == "verified", r.reason
    assert "2 of 7 identical warps" in api.verified_bounds(r.bounds)


def test_an_mbarrier_waiting_for_other_arrivals_keeps_every_arriver(require_spin):
    # Nine arrivals expected, eight made: the count is not what the arrivers give, so no warp is
    # left out and the deadlock is found with all of them.
    src = kernel_source(ARRIVE_ALL.format(count=9), threads=256)
    assert symmetry.families(model(src)) == []
    r = check(src)
    assert r.verdict == "counterexample" and r.findings[0].code == "CS101", r.reason


def test_warps_that_arrive_and_expect_bytes_are_all_kept():
    src = kernel_source(ARRIVE_ALL.format(count=8).replace(
        "cute.arch.mbarrier_arrive(bar)", "cute.arch.mbarrier_arrive_and_expect_tx(bar, 128)"), threads=256)
    k = model(src)
    assert not k.unmodeled, k.unmodeled
    assert symmetry.families(k) == []


def test_a_count_fix_is_not_computed_from_the_warps_checked(require_spin):
    # Lanes that skip the arrival deadlock the wait. The search ran on warps 1-2 of 1-7 with the
    # count lowered to 3: "3 - 1 missing" is no count for the source, so no count fix is proposed.
    body = ARRIVE_ALL.format(count=8).replace(
        "with cute.arch.elect_one():\n    cute.arch.mbarrier_arrive(bar)",
        "tidx, _, _ = cute.arch.thread_idx()\nif mA[tidx] > 0:\n    with cute.arch.elect_one():\n"
        "        cute.arch.mbarrier_arrive(bar)")
    src = kernel_source(body, threads=256)
    r = api.check_source(src, "k.py", Settings(), with_fixes=True).kernels[0]
    assert r.bounds["identical_warps"][0]["kept"] == [1, 2]
    assert r.verdict == "counterexample" and r.findings[0].code == "CS101", r.reason
    assert not [x.title for x in r.findings[0].fixes if "arrival count" in x.title]


def test_show_promela_gives_the_model_the_check_searched():
    # The editor's "show Promela" command re-lowers the kernel: it must show the reduced model
    # (warps 1-2 of 1-7, the count lowered to 3), not one the search never ran on.
    src = kernel_source(ARRIVE_ALL.format(count=8), threads=256)
    r = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]
    shown = api.promela_for(src, "k.py", Settings(), r.qualname)
    assert shown is not None and r.promela is not None
    assert shown.text == r.promela.text
    assert shown.text.count("proctype P") == 3


# Every thread counts its element into a GMEM histogram (cuDNN's flex-attention schedule): relaxed
# atomics nobody waits on. Which warps added, and in which order, decides nothing.
HISTOGRAM = """\
flag = mFlag.iterator
tidx, _, _ = cute.arch.thread_idx()
if tidx < mA.shape[0]:
    cute.arch.atomic_add(flag, 1, sem="relaxed", scope="gpu")
{wait}
"""
SPIN = """\
bidx, _, _ = cute.arch.block_idx()
if bidx == 1:
    while cute.arch.load(flag, cutlass.Int32, sem="acquire", scope="gpu") < 1:
        pass
"""


def histogram(wait: str = "") -> str:
    src = kernel_source(HISTOGRAM.format(wait=wait), threads=256, pins="grid=2")
    return src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, mFlag: cute.Tensor):")


def test_warps_updating_a_flag_nobody_waits_on_are_merged(require_spin):
    k = model(histogram())
    assert any(isinstance(o, ir.FlagUpdate) for p in k.processes for v in p.variants for o in ir.walk(v))
    assert [(f.cta, f.kept) for f in symmetry.families(k)] == [(0, (0, 1)), (1, (0, 1))]
    r = check(histogram())
    assert r.verdict == "verified", r.reason
    assert r.stats["states"] < 1000
    text = api.promela_for(histogram(), "k.py", Settings(), "K.kernel").text
    assert "fv[" not in text  # the counter's value is not state


def test_warps_updating_a_flag_some_warp_waits_on_are_all_kept():
    k = model(histogram(SPIN))
    assert any(isinstance(o, ir.FlagWait) for p in k.processes for v in p.variants for o in ir.walk(v))
    updaters = {(f.cta, f.warps) for f in symmetry.families(k)}
    # CTA 0's warps only add: ... but the count CTA 1 waits for depends on how many did.
    assert all(cta != 0 for cta, _ in updaters)
    assert "fv[" in api.promela_for(histogram(SPIN), "k.py", Settings(), "K.kernel").text
