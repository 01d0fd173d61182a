"""A warp role picked by a kernel argument: `if warp == wn:` with `wn` a `cutlass.Constexpr`
the front end cannot fold (cudnn's layernorm backward: warp `wn` loads, warps `0..wn-1`
compute and sync `tpr = 32 * wn` threads on a named barrier).

`wn` is one value for the whole launch, so exactly one warp is the loader, and the warps that
sync on the barrier (whose count is derived from its users) are the others. It used to be a
choice each warp made on its own: two warps could both load (a false race) or, once the choice
was shared, the named barrier counted the users of every choice together and waited for a warp
that was the loader (a false deadlock)."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import line_of

KERNEL = """\
import cutlass
import cutlass.cute as cute


@cute.kernel
def reduce_rows(mA: cute.Tensor, wn: cutlass.Constexpr, tpr: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    warp = tid // 32
    lane = tid % 32
    smem = cutlass.utils.SmemAllocator()
    red = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
    bar = smem.allocate_array(cutlass.Int64, 1)
    if tid == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.sync_threads()
    if warp == wn:  # the loader warp comes after the compute warps
        if lane == 0:
            red[31] = mA[0]
            cute.arch.mbarrier_arrive(bar)
    else:
        cute.arch.mbarrier_wait(bar, 0)
        if lane == 0:
            red[warp] = red[31]
        cute.arch.barrier(barrier_id=1, number_of_threads=tpr)
        mA[tid] = red[0]


@cute.jit
def launch(mA: cute.Tensor, wn: cutlass.Constexpr):
    reduce_rows(mA, wn, wn * 32).launch(grid=(1, 1, 1), block=(wn * 32 + 32, 1, 1))
"""


def check(src):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_one_loader_warp_per_launch_and_the_barrier_counts_the_others(require_spin):
    r = check(KERNEL)
    assert r.verdict == "verified", [f.message for f in r.findings]
    assert any("compared with the warp index (warps [0, 1, 2, 3]) is the index of one of those warps" in a
               for a in r.assumptions)


def test_each_loader_choice_is_a_configuration_with_its_own_barrier_count():
    m = build_models(KERNEL, "k.py", Settings())[0]
    assert len(m.configs) == 4  # wn = 0, 1, 2, 3: no value that names no warp
    for c, _ in enumerate(m.configs):
        def named_1(p):
            return [op for op in ir.walk(p.variants[c]) if isinstance(op, ir.NamedBarrier) and op.barrier_id == 1]
        users = [p.warp for p in m.processes if named_1(p)]
        assert len(users) == 3 and {op.threads for p in m.processes for op in named_1(p)} == {96}
        loader = ({0, 1, 2, 3} - set(users)).pop()
        assert m.configs[c].describe() == f"`warp == wn` (line 16) in warp {loader}"


def test_a_loader_that_never_arrives_still_deadlocks_the_compute_warps(require_spin):
    src = KERNEL.replace("            cute.arch.mbarrier_arrive(bar)\n", "")
    r = check(src)
    assert r.verdict == "counterexample"
    assert (r.findings[0].code, r.findings[0].span.line) == ("CS101", line_of(src, "cute.arch.mbarrier_wait(bar, 0)"))


def test_compute_warps_reading_before_the_wait_still_race(require_spin):
    src = KERNEL.replace("        cute.arch.mbarrier_wait(bar, 0)\n", "")
    r = check(src)
    assert r.verdict == "counterexample"
    assert (r.findings[0].code, r.findings[0].span.line) == ("CS201", line_of(src, "red[warp] = red[31]"))


ORDERED = """\
import cutlass
import cutlass.cute as cute


@cute.kernel
def roles(mA: cute.Tensor, first: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    warp = tid // 32
    if warp >= first:  # the comm warps (cutlass's LDMC x STMC all-reduce: warp >= comm_warp_id[0])
        cute.arch.sync_threads()
    if warp < first:
        cute.arch.sync_threads()


@cute.jit
def host(mA: cute.Tensor):
    roles(mA, mA.shape[0]).launch(grid=(1, 1, 1), block=(128, 1, 1))
"""


def test_an_ordered_comparison_with_the_warp_index_is_one_value_for_every_warp(require_spin):
    # Each warp compares its own index with `first`: a different term per warp, but one value of
    # `first` for all of them, so every warp goes through exactly one of the two barriers (as
    # separate choices a warp could take both or neither: a false deadlock).
    (k,) = api.check_source(ORDERED, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])
