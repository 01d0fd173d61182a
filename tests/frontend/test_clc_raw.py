"""Raw cluster launch control: `cute.arch.issue_clc_query(bar, response)` and
`cute.arch.clc_response(response)`, as package schedulers use them without
`PipelineClcFetchAsync`'s tile scheduler (cuDNN's MoE and frost GEMM kernels).

The query is an asynchronous write of the 16-byte response buffer in every CTA of the cluster that
completes 16 transaction bytes on that CTA's barrier (like a TMA load); `clc_response` is a plain
read of the buffer, ordered only by the wait on that barrier, and its decoded (m, n, l, is_valid)
are CTA-uniform work-tile values (P14), so every warp's `while is_valid:` loop runs the same trips.
"""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

# One CTA: warp 0 is the scheduler (waits for the response slot to be free, arms the full barrier
# with the response bytes, queries); both warps wait for the response, decode it and release it.
SCHEDULER = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
response = smem.allocate_array(cutlass.Int32, num_elems=4, byte_alignment=16)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bars, 1)
        cute.arch.mbarrier_init(bars + 1, 2)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
phase = cutlass.Int32(0)
is_valid = cutlass.Boolean(True)
while is_valid:
    if warp_idx == 0:
        cute.arch.mbarrier_wait(bars + 1, phase ^ 1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bars, 16)
            cute.arch.issue_clc_query(bars, response)
    cute.arch.mbarrier_wait(bars, phase)
    m, n, l, is_valid = cute.arch.clc_response(response)
    cute.arch.fence_acq_rel_cta()
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bars + 1)
    phase ^= 1
"""

# A 2-CTA cluster: only CTA 0 queries (the response is multicast), every CTA arms its own full
# barrier and releases the slot on CTA 0's empty barrier; a cluster barrier ends the kernel.
CLUSTER_SCHEDULER = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
response = smem.allocate_array(cutlass.Int32, num_elems=4, byte_alignment=16)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bars, 1)
        cute.arch.mbarrier_init(bars + 1, 4)
cute.arch.mbarrier_init_fence()
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
phase = cutlass.Int32(0)
is_valid = cutlass.Boolean(True)
while is_valid:
    if warp_idx == 0:
        if cta_rank == 0:
            cute.arch.mbarrier_wait(bars + 1, phase ^ 1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bars, 16)
        if cta_rank == 0:
            with cute.arch.elect_one():
                cute.arch.issue_clc_query(bars, response)
    cute.arch.mbarrier_wait(bars, phase)
    m, n, l, is_valid = cute.arch.clc_response(response)
    cute.arch.fence_acq_rel_cta()
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bars + 1, peer_cta_rank_in_cluster=0, scope="cluster")
    phase ^= 1
cute.arch.cluster_arrive()
cute.arch.cluster_wait()
"""

DECODE = "m, n, l, is_valid = cute.arch.clc_response(response)"
WAIT_FULL = "    cute.arch.mbarrier_wait(bars, phase)\n"


def check(src: str):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_query_writes_the_response_and_the_decode_reads_it():
    m = build_models(kernel_source(SCHEDULER), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    ops = list(ir.walk(next(p for p in m.processes if p.warp == 0).variants[0]))
    query = [o for o in ops if isinstance(o, ir.TmaLoad)]
    assert query and all(o.tx == 16 and o.region is not None and o.region.name.startswith("response") for o in query)
    reads = [o for o in ops if isinstance(o, ir.Access) and not o.write and o.region.name.startswith("response")]
    assert reads and all(o.span.line == line_of(kernel_source(SCHEDULER), DECODE) for o in reads)


def test_waiting_before_decoding_is_verified_and_every_warp_agrees_on_is_valid():
    kr = check(kernel_source(SCHEDULER))
    assert kr.verdict == "verified", (kr.verdict, kr.findings, kr.unmodeled)


def test_decoding_before_the_wait_is_a_race():
    src = kernel_source(SCHEDULER.replace(WAIT_FULL + "    " + DECODE + "\n",
                                          "    " + DECODE + "\n" + WAIT_FULL))
    kr = check(src)
    assert kr.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in kr.findings] == [("CS201", line_of(src, DECODE))]


def test_a_query_on_an_unarmed_barrier_deadlocks():
    # The tx bytes land on a barrier whose single arrival never comes.
    src = kernel_source(SCHEDULER.replace("            cute.arch.mbarrier_arrive_and_expect_tx(bars, 16)\n", ""))
    kr = check(src)
    assert kr.verdict == "counterexample"
    assert [f.code for f in kr.findings] == ["CS101"]
    assert kr.findings[0].span.line == line_of(src, WAIT_FULL.strip())


def test_waiting_for_the_free_slot_on_the_wrong_parity_deadlocks():
    src = kernel_source(SCHEDULER.replace("mbarrier_wait(bars + 1, phase ^ 1)", "mbarrier_wait(bars + 1, phase)"))
    kr = check(src)
    assert kr.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in kr.findings] == [("CS101", line_of(src, "mbarrier_wait(bars + 1, phase)"))]


def test_a_multicast_query_in_a_cluster_is_verified():
    kr = check(kernel_source(CLUSTER_SCHEDULER, cluster="(2, 1, 1)", grid="(2, 1, 1)"))
    assert kr.verdict == "verified", (kr.verdict, kr.findings, kr.unmodeled)


def test_a_peer_cta_that_does_not_arm_its_barrier_deadlocks_on_the_multicast_response():
    src = CLUSTER_SCHEDULER.replace("""\
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bars, 16)
        if cta_rank == 0:
""", """\
        if cta_rank == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(bars, 16)
""")
    kr = check(kernel_source(src, cluster="(2, 1, 1)", grid="(2, 1, 1)"))
    assert kr.verdict == "counterexample"
    assert "CS101" in [f.code for f in kr.findings]


def test_an_unresolved_response_buffer_is_reported():
    src = kernel_source(SCHEDULER.replace("clc_response(response)", "clc_response(self.response_ptr)"))
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.why) for u in m.unmodeled] == [
        ("cute.arch.clc_response", "the response buffer could not be resolved")]


RELEASE_SLOT = "cute.arch.mbarrier_arrive(bars + 1, peer_cta_rank_in_cluster=0, scope=\"cluster\")"


def test_a_relaxed_arrive_freeing_the_slot_lets_the_next_query_overwrite_the_decode():
    # cuDNN's frost GEMMs free the CLC slot with `mbarrier_arrive(..., relaxed=True)`, which orders
    # none of the thread's earlier loads (PTX): the next query may land before the decode's read.
    src = kernel_source(CLUSTER_SCHEDULER.replace("    cute.arch.fence_acq_rel_cta()\n", "").replace(
        RELEASE_SLOT, RELEASE_SLOT[:-1] + ", relaxed=True)"), cluster="(2, 1, 1)", grid="(2, 1, 1)")
    assert "relaxed=True" in src
    kr = check(src)
    assert kr.verdict == "counterexample", (kr.verdict, kr.reason)
    (race,) = kr.findings
    assert race.code == "CS201" and not race.possible and "write-after-read" in race.message, race.message
    assert "issues a CLC query into response" in race.message, race.message
    assert any("relaxed: it orders none of the warp's earlier accesses" in s.message for s in race.related), \
        [s.message for s in race.related]
    released = check(kernel_source(CLUSTER_SCHEDULER.replace("    cute.arch.fence_acq_rel_cta()\n", ""),
                                   cluster="(2, 1, 1)", grid="(2, 1, 1)"))
    assert released.verdict == "verified", (released.verdict, released.reason)
