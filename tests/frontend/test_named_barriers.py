"""Named barriers whose id comes from an IntEnum, and whose thread count does not fold."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source

ENUM = """\
import enum


class Bar(enum.IntEnum):
    Epilogue = enum.auto()
    Exchange = enum.auto()
    Fixed = 9
    AfterFixed = enum.auto()
"""

BODY = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
tidx, _, _ = cute.arch.thread_idx()
if warp_idx < 2:
    buf[tidx] = 1.0
    cute.arch.barrier(barrier_id=int(Bar.Exchange), number_of_threads=self.num_threads)
    x = buf[63 - tidx]
    cute.arch.barrier(barrier_id=Bar.AfterFixed, number_of_threads={second})
"""


def source(second="self.num_threads"):
    src = kernel_source(BODY.format(second=second), threads=96, init="self.num_threads = num_threads\n")
    src = src.replace("def __init__(self):", "def __init__(self, num_threads):")
    return src.replace("import cutlass\n", ENUM + "import cutlass\n", 1)


def named(m):
    return [(o.barrier_id, o.threads) for p in m.processes for o in p.variants[0] if isinstance(o, ir.NamedBarrier)]


def test_int_enum_members_fold_like_python_numbers_them():
    m = build_models(source(), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    # Warps 0 and 1 use both barriers; warp 2 never does, so the derived count is 64 threads.
    assert named(m) == [(2, 64), (10, 64)] * 2
    assert sum("thread count of named barrier" in a for a in m.assumptions) == 2


def test_a_derived_thread_count_leaves_a_known_count_alone(require_spin):
    m = build_models(source(second="96"), "k.py", Settings())[0]
    assert named(m) == [(2, 64), (10, 96)] * 2
    # The known count (96) waits for a warp that never arrives: still a deadlock.
    r = api.check_source(source(second="96"), "k.py", Settings().with_overrides(verify_fixes=False),
                         with_fixes=False).kernels[0]
    assert r.verdict == "counterexample" and r.findings[0].code == "CS101", r.reason
    ok = api.check_source(source(), "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False)
    assert ok.kernels[0].verdict == "verified", ok.kernels[0].reason


def test_a_barrier_id_offset_by_the_warp_group_is_one_id_per_group():
    # Ping-pong warp groups: `base + warp_group_idx` with warp_group_idx = tidx // 128 (the same
    # in every lane, and once more made explicit by make_warp_uniform).
    src = kernel_source("""\
        tidx, _, _ = cute.arch.thread_idx()
        warp_group_idx = cute.arch.make_warp_uniform(tidx // 128)
        cute.arch.barrier(barrier_id=int(Bar.Exchange) + warp_group_idx, number_of_threads=128)
        cute.arch.barrier_arrive(barrier_id=3 + tidx // 128, number_of_threads=256)
        """, threads=256)
    m = build_models(ENUM + src, "k.py", Settings())[0]
    assert m.unmodeled == []
    for p in m.processes:
        ids = [op.barrier_id for op in ir.walk(p.variants[-1]) if isinstance(op, ir.NamedBarrier)]
        assert ids == [2 + p.warp // 4, 3 + p.warp // 4]


EPILOGUE = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
sO = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
tidx, _, _ = cute.arch.thread_idx()
cute.arch.barrier(barrier_id=1, number_of_threads=self.num_threads)
sO[tidx] = 1.0
cute.arch.barrier_arrive(barrier_id=1, number_of_threads=self.num_threads + cute.arch.WARP_SIZE)
if warp_idx == 0:
    cute.arch.barrier(barrier_id=1, number_of_threads=self.num_threads + cute.arch.WARP_SIZE)
    x = sO[63 - tidx]
"""


def test_an_unknown_count_plus_a_constant_is_the_derived_count_plus_it(require_spin):
    """flash-attn-4's epilogue: every thread arrives on `num_epilogue_threads + WARP_SIZE` and the
    storing warp then syncs on it too (arriving twice). Deriving both counts as the threads of the
    warps that use the barrier (64) let the arrivals complete the phase alone and left the
    storing warp's sync waiting forever, a false deadlock."""
    src = kernel_source(EPILOGUE, threads=64, init="self.num_threads = num_threads\n")
    src = src.replace("def __init__(self):", "def __init__(self, num_threads):")
    m = build_models(src, "k.py", Settings())[0]
    assert named(m)[:3] == [(1, 64), (1, 96), (1, 96)]
    fr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False)
    assert fr.kernels[0].verdict == "verified", [f.message for f in fr.kernels[0].findings]


CHOSEN_USER = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
tidx, _, _ = cute.arch.thread_idx()
v = mA[tidx]
if warp_idx == 0:
    cute.arch.barrier(barrier_id=1, number_of_threads=self.num_threads)
else:
    if v > 0:
        cute.arch.barrier(barrier_id=1, number_of_threads=self.num_threads)
"""


def test_a_deadlock_at_a_count_derived_from_a_user_under_a_runtime_choice_is_possible(require_spin):
    # `self.num_threads` does not fold, so the count is taken to be both warps' threads; warp 1
    # uses the barrier only when its data says so. In a run where it does not, warp 0 waits for 64
    # threads, a count the kernel may never ask for (cutlass's LDMC x STMC GEMM, whose comm warps
    # are `warp_idx >= comm_warp_id[0]` with the bound unfolded): possible, not proven.
    src = kernel_source(CHOSEN_USER)
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "thread count does not fold" in k.reason
    (f,) = k.findings
    assert f.code == "CS101" and f.possible


def test_a_deadlock_at_a_derived_count_whose_users_always_arrive_stays_a_counterexample(require_spin):
    # Warp 1 always syncs, then waits on a barrier nobody arrives on: a real deadlock, unrelated.
    src = kernel_source(CHOSEN_USER.replace("    if v > 0:\n        cute.arch.barrier(barrier_id=1, number_of_threads=self.num_threads)",
                                            "    cute.arch.barrier(barrier_id=1, number_of_threads=self.num_threads)\n"
                                            "    cute.arch.barrier(barrier_id=2, number_of_threads=64)"))
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS101"] and not k.findings[0].possible


def host_id_kernel(count: int, second_id: str = "cfg.exchange_id") -> str:
    """Two warps exchange through `buf` at named barriers whose ids come from a host config."""
    return kernel_source(f"""\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
tidx, _, _ = cute.arch.thread_idx()
if warp_idx < 2:
    buf[tidx] = 1.0
    cute.arch.barrier(barrier_id=cfg.exchange_id, number_of_threads={count})
    x = buf[63 - tidx]
    cute.arch.barrier(barrier_id={second_id}, number_of_threads=64)
    buf[tidx] = 2.0
""", threads=128, params="cfg: cutlass.Constexpr").replace(
        "def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, cfg: cutlass.Constexpr):").replace(
        "self.kernel(mA)", "self.kernel(mA, cfg)")


def test_a_host_config_barrier_id_is_one_symbolic_barrier(require_spin):
    src = host_id_kernel(64)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    ids = {op.barrier_id for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.NamedBarrier)}
    assert len(ids) == 1 and min(ids) >= ir.SYMBOLIC_BARRIER_IDS, ids
    assert any("`cfg.exchange_id` does not fold" in a for a in m.assumptions), m.assumptions
    r = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_symbolic_barrier_waiting_for_too_many_threads_deadlocks_and_is_named_by_its_text(require_spin):
    r = api.check_source(host_id_kernel(96), "k.py", Settings().with_overrides(verify_fixes=False),
                         with_fixes=False).kernels[0]
    assert r.verdict == "counterexample", r.reason
    deadlock = next(f for f in r.findings if f.code == "CS101")
    assert "named barrier `cfg.exchange_id` (96 threads)" in deadlock.message, deadlock.message


def test_different_unfolded_ids_are_different_barriers():
    # `cfg.other_id` is taken to differ from `cfg.exchange_id` (stated): two barriers, not one.
    src = host_id_kernel(64, second_id="cfg.other_id")
    m = build_models(src, "k.py", Settings())[0]
    ids = {op.barrier_id for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.NamedBarrier)}
    assert len(ids) == 2, ids
