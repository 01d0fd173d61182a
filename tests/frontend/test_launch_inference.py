"""What the front end infers when the host does not fold: the block size from the kernel's warp
dispatch, loop-bound values shared with the loops they bound, and the ring a staged epilogue
buffer rotates through (samples/hopper_persistent_gemm_ok.py is the kernel these patterns come
from: the canonical warp-specialized persistent Hopper GEMM).
"""
from pathlib import Path

import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models, kernel_env
from cutespin.frontend.discover import discover
from cutespin.frontend.values import Unknown
from tests.kernels import async_pipeline, kernel_source

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "hopper_persistent_gemm_ok.py"


def _check(text: str):
    result = api.check_source(text, str(SAMPLE), Settings().with_overrides(verify_fixes=False), with_fixes=False)
    kr = result.kernels[0]
    return kr.verdict, [(f.code, f.span.line) for f in kr.findings]


def _variant(old: str, new: str) -> str:
    text = SAMPLE.read_text()
    assert text.count(old) == 1
    return text.replace(old, new)


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ---------------------------------------------------------------- block size from the dispatch


def _warps(body: str, threads: str) -> tuple:
    src = kernel_source(body, threads=threads, init="self.n = n_from_host()")
    m = build_models(src, "k.py", Settings())[0]
    return m.warps, [a for a in m.assumptions if a.startswith("block size")]


def test_unfoldable_block_size_covers_a_role_past_the_first_warp_group():
    warps, said = _warps("""\
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            cute.arch.sync_warp()
        if warp_idx == 5:
            cute.arch.sync_warp()
        """, "self.n")
    assert warps == 8
    assert said and "256 threads" in said[0] and "# cutespin: block=N" in said[0]


def test_unfoldable_block_size_covers_an_else_role():
    warps, _ = _warps("""\
        warp_group = cute.arch.make_warp_uniform(cute.arch.warp_idx() // 4)
        if warp_group < 1:
            cute.arch.sync_warp()
        else:
            cute.arch.sync_warp()
        """, "self.n")
    assert warps == 8


def test_unfoldable_block_size_without_dispatch_is_one_warp_group():
    warps, said = _warps("cute.arch.sync_threads()\n", "self.n")
    assert warps == 4 and "128 threads" in said[0]


def test_a_role_that_only_more_warps_would_skip_does_not_grow_the_block():
    # `if warp_idx == 0` has no else: warps 1.. reach nothing new, so the block stays one group.
    warps, _ = _warps("""\
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            cute.arch.sync_warp()
        """, "self.n")
    assert warps == 4


def test_a_folded_block_size_is_not_searched():
    warps, said = _warps("""\
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 5:
            cute.arch.sync_warp()
        """, "64")
    assert warps == 2 and said == []


def test_persistent_gemm_gets_its_mma_warp_group():
    m = build_models(SAMPLE.read_text(), str(SAMPLE), Settings())[0]
    assert m.warps == 8
    roles = {p.warp for p in m.processes}
    assert {0, 4, 5, 6, 7} <= roles


# ---------------------------------------------------------------- loop bounds as values


@pytest.mark.usefixtures("require_spin")
def test_persistent_gemm_is_verified():
    assert _check(SAMPLE.read_text()) == ("verified", [])


@pytest.mark.usefixtures("require_spin")
def test_a_consumer_that_reads_one_k_tile_too_many_deadlocks():
    # The main loop restarting at 0 after the prologue reads k_tile_cnt + 1 stages per tile.
    text = _variant("for k in cutlass.range(prologue_mma_cnt, k_tile_cnt):",
                    "for k in cutlass.range(k_tile_cnt):")
    verdict, findings = _check(text)
    assert verdict == "counterexample"
    assert findings and findings[0][0] == "CS101"


def test_min_of_a_loop_bound_folds_in_each_configuration():
    # `prologue_mma_cnt = min(1, k_tile_cnt)` is 1 in every configuration and the main loop
    # `range(prologue_mma_cnt, k_tile_cnt)` runs k_tile_cnt - 1 trips: an MMA warp waits on the
    # pipeline k_tile_cnt times per tile (t tiles of t k-tiles in the configuration where every
    # runtime bound takes t trips). Reading the bound as a separate unknown gave 2t per tile.
    m = build_models(SAMPLE.read_text(), str(SAMPLE), Settings())[0]
    mma = next(p for p in m.processes if p.warp == 4)
    for config, ops in zip(m.configs, mma.variants):
        t = config.trips["k_tile_cnt"]
        assert config.trips["tile.is_valid_tile"] == t
        assert sum(isinstance(op, ir.MbWait) for op in ir.walk(ops)) == t * t


# ---------------------------------------------------------------- epilogue ring


@pytest.mark.usefixtures("require_spin")
def test_an_epilogue_buffer_that_does_not_rotate_across_tiles_is_a_race():
    # Without the tiles already done, every tile's first sub-tile reuses buffer 0 while the last
    # TMA store of the previous tile may still read it (producer_acquire keeps one in flight).
    text = _variant("done_before = sched.num_tiles_executed * epi_tiles", "done_before = 0")
    verdict, findings = _check(text)
    assert verdict == "counterexample"
    assert ("CS201", _line(text, "cute.copy(r2s, tRS_rC")) in findings


# ---------------------------------------------------------------- bounds a loop divides

PAIRS = async_pipeline() + """\
k_tile_cnt = cute.size(mA, mode=[1])
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    for it in cutlass.range(k_tile_cnt // 2, unroll=1):
        for buf in cutlass.range_constexpr(2):
            pipe.producer_acquire(st)
            pipe.producer_commit(st)
            st.advance()
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    for k in cutlass.range(k_tile_cnt, unroll=1):
        pipe.consumer_wait(st)
        pipe.consumer_release(st)
        st.advance()
"""


def test_a_bound_that_another_loop_halves_takes_even_trip_counts():
    # flash-attn-4's MLA backward loads K/V two tiles per trip (`range(k_tile_cnt // 2)`) while the
    # MMA warp takes one per trip: an odd count is a host error (`assert top_k % (2 * tile_k) == 0`),
    # not a deadlock to report.
    src = kernel_source(PAIRS)
    m = build_models(src, "k.py", Settings())[0]
    counts = {c.trips["k_tile_cnt"] for c in m.configs}
    assert 2 in counts and all(n % 2 == 0 for n in counts), counts
    assert any("`k_tile_cnt` is taken to be a multiple of 2" in a for a in m.assumptions)
    result = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "verified", result.kernels[0].reason


# ---------------------------------------------------------------- host branches that pick the cluster

PAIR_INIT = """\
if topk % 256 == 1:
    self.cluster_shape_mn = (2, 1)
    self.pair = 2
else:
    self.cluster_shape_mn = (1, 1)
    self.pair = 1
"""

# Only the leader CTA of an MMA pair produces: `bidx % self.pair == 0`.
PAIR_BODY = async_pipeline() + """\
bidx, _, _ = cute.arch.block_idx()
is_leader = bidx % self.pair == 0
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    if is_leader:
        pipe.producer_acquire(st)
        pipe.producer_commit(st)
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    pipe.consumer_wait(st)
    pipe.consumer_release(st)
"""


def _pair_kernel(init: str = PAIR_INIT, cluster: str = "(*self.cluster_shape_mn, 1)") -> str:
    return kernel_source(PAIR_BODY, init=init, cluster=cluster)


def test_a_host_branch_setting_the_cluster_shape_runs_on_the_modeled_clusters_side(require_spin):
    src = _pair_kernel()
    m = build_models(src, "k.py", Settings())[0]
    assert m.cluster_size == 1
    said = [a for a in m.assumptions if a.startswith("the host condition")]
    assert said == ["the host condition `topk % 256 == 1` (line 9) is taken as False: that side sets "
                    "self.cluster_shape_mn = (1, 1), the modeled cluster, and the attributes that go with it"]
    assert _line(src, "if topk % 256 == 1") == 9
    result = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False)
    assert result.kernels[0].verdict == "verified", result.kernels[0].reason


def test_with_the_pair_flag_unknown_the_leader_test_is_a_choice(require_spin):
    # The same kernel with the flag set outside the branch: the leader test does not fold, and the
    # consumer may wait for a commit that never comes. This is what the side taken above avoids.
    init = PAIR_INIT.replace("    self.pair = 2\n", "").replace("    self.pair = 1\n", "") + "self.pair = pair_from_host()\n"
    src = _pair_kernel(init)
    result = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False)
    kr = result.kernels[0]
    assert kr.verdict == "counterexample", kr.reason
    assert [f.code for f in kr.findings] == ["CS101"]


def test_a_launch_cluster_not_built_from_the_attribute_takes_no_side():
    src = _pair_kernel(cluster="(1, 1, 1)")
    m = build_models(src, "k.py", Settings())[0]
    assert not [a for a in m.assumptions if a.startswith("the host condition")]


def test_a_helper_parameter_named_for_the_cluster_shape_is_not_reported_when_the_launch_cluster_folds():
    src = kernel_source("pass\n", init="self.cluster_shape_mn = (2, 1)", cluster="(*self.cluster_shape_mn, 1)",
                        extra_class="def _grid(self, cluster_shape_mn):\n    return cluster_shape_mn\n\n")
    m = build_models(src, "k.py", Settings())[0]
    assert m.cluster_size == 2
    assert not [a for a in m.assumptions if "1-CTA cluster" in a], m.assumptions
    # Without a folded launch cluster the default is the modeled cluster, and it is said.
    src = kernel_source("pass\n", cluster="(*cluster_shape_mn, 1)", params="cluster_shape_mn: cute.Shape")
    m = build_models(src, "k.py", Settings())[0]
    assert m.cluster_size == 1
    assert [a for a in m.assumptions if "1-CTA cluster" in a], m.assumptions


def test_a_module_constant_the_interpreter_cannot_follow_is_unknown_not_a_crash():
    # cudnn-frontend's SDPA backward: `block=[CFG.THREADS_PER_CTA, 1, 1]` with `CFG = make_cfg(...)`
    # at module level, whose validation loop returns under a condition on its arguments.
    config = """\
def make_cfg(params):
    for i in range(4):
        if params.smem_bytes > i:
            return params
    return params


CFG = make_cfg(PARAMS)
"""
    src = kernel_source("""\
        if CFG.fast:
            cute.arch.sync_threads()
        """, threads="CFG.THREADS_PER_CTA")
    src = src.replace("\n\nclass K:", "\n\n" + config + "\n\nclass K:", 1)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert any(a.startswith("block size not foldable") for a in m.assumptions), m.assumptions
    # A module constant is one value for every thread: the condition on it is CTA-uniform.
    shared = [op.shared for p in m.processes for op in ir.walk(p.variants[0]) if isinstance(op, ir.Choice)]
    assert shared and all(s is not None for s in shared), shared


def test_a_named_barrier_wider_than_the_dispatch_raises_the_block_size():
    # The loader warp's index does not fold, so the dispatch tells no warps apart; every warp
    # syncs 160 threads on barrier 1: a 128-thread guess would leave it one warp short (a false
    # deadlock).
    body = """\
        warp = cute.arch.warp_idx()
        if warp == self.load_warp:
            cute.arch.barrier(barrier_id=1, number_of_threads=160)
        else:
            cute.arch.barrier(barrier_id=1, number_of_threads=160)
        """
    src = kernel_source(body, threads="self.threads",
                        init="self.threads = threads_from_host()\nself.load_warp = warp_from_host()")
    m = build_models(src, "k.py", Settings())[0]
    assert m.warps == 8, m.warps


def _site(src: str):
    info = discover(src, "k.py")
    return info, info.kernels[0], Settings()


def test_a_constructor_statement_that_cannot_be_followed_does_not_lose_the_later_attributes():
    # cudnn's SM120 SDPA backward validates its warp partition in a loop that raises, then sets
    # `self.threads = 384`.
    init = """\
for a in (self.wm, self.wn):
    if a % 2:
        raise ValueError("bad partition")
self.part = self.pick(self.wm)
self.threads = 256
"""
    # `pick` returns under a condition inside a loop: not followed, so `self.part` is unknown.
    extra = """\
def pick(self, a):
    for i in range(4):
        if a.smem_bytes > i:
            return i
    return 0

"""
    src = kernel_source("cute.arch.sync_threads()\n", threads="self.threads", init="self.wm = wm\nself.wn = wn\n" + init,
                        extra_class=extra)
    m = build_models(src, "k.py", Settings())[0]
    assert m.warps == 8
    assert not any(a.startswith("block size not foldable") for a in m.assumptions), m.assumptions
    env = kernel_env(*_site(src))
    assert isinstance(env.self_obj.attrs["part"], Unknown) and env.self_obj.attrs["threads"] == 256


def test_a_kernel_call_bound_to_a_name_is_launched_through_it():
    """cuDNN's generated hosts: `launch = kernel(...)`, then `launch.launch(grid=, block=, cluster=)`."""
    src = """\
import cutlass
import cutlass.cute as cute

cluster_shape_mnk = (2, 1, 1)


@cute.kernel
def k(mA: cute.Tensor):
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def host(mA: cute.Tensor):
    launch = k(mA)
    launch.launch(grid=(4, 1, 1), block=(96, 1, 1), cluster=cluster_shape_mnk)
"""
    m = build_models(src, "k.py", Settings())[0]
    assert (m.cluster_size, m.warps) == (2, 3)
    assert not any("launch" in a and "no `.launch" in a for a in m.assumptions), m.assumptions
