"""The stage count a kernel's loop bound comes from: a count, never a size, and the same in every
run (the attribute order once followed the hash seed, and `dsa_bwd`'s 4,096-element stage was
taken for 4,096 stages in some runs and not in others)."""
import os
import subprocess
import sys
from pathlib import Path

from cutespin.frontend import _find_stages
from cutespin.frontend.interp import _union_keys

from ..kernels import HEADER, kernel_source


def test_sizes_of_a_stage_are_not_stage_counts():
    attrs = {"round_stage_elements": 4096, "a_stage_bytes": 512, "ab_stages": 3}
    assert _find_stages(None, attrs) == 3
    assert _find_stages(None, {"num_stages_kv": 4}) == 4
    # Several rings: the smallest, in whatever order they were set.
    assert _find_stages(None, {"num_stages_dS": 4, "num_stages_KV": 2}) == 2
    assert _find_stages(None, {"num_stages_KV": 2, "num_stages_dS": 4}) == 2
    assert _find_stages(None, {"stage_bytes": 128}) is None
    assert _find_stages(None, {"k_sf_stage_hi_off": 256, "stage_offset": 64, "kv_stages": 2}) == 2


def test_merged_names_keep_their_first_seen_order():
    assert _union_keys([{"b": 1, "a": 2}, {"c": 3, "a": 4}]) == ["b", "a", "c"]


BODY = """\
tidx, _, _ = cute.arch.thread_idx()
for i in cutlass.range(mA.shape[0]):
    mA[tidx] = 1.0
"""

# `mode` has no default: the branch is a runtime one, and the attributes it sets are merged.
INIT = """\
self.round_stage_elements = 4096
self.kv_stages = 3
if mode > 0:
    self.acc_stages = 5
    self.epi_stages = 4
else:
    self.epi_stages = 4
    self.acc_stages = 5
"""

PROBE = """\
import sys
from cutespin.config import Settings
from cutespin.frontend import build_models
src = sys.stdin.read()
print(build_models(src, "k.py", Settings())[0].bounds["stages"])
"""


def test_the_stage_count_does_not_depend_on_the_hash_seed():
    src = kernel_source(BODY, init=INIT).replace("def __init__(self):", "def __init__(self, mode):")
    seen = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", PROBE], input=src, capture_output=True, text=True, env=env,
                             cwd=Path(__file__).parents[2], timeout=120)
        assert out.returncode == 0, out.stderr
        seen.add(out.stdout.strip())
    assert seen == {"3"}


def test_a_deep_ring_caps_the_default_loop_bound_and_says_so():
    from cutespin.config import Settings
    from cutespin.frontend import MAX_DEFAULT_LOOP_BOUND, build_models

    deep = build_models(kernel_source(BODY, init="self.num_stages = 64\n"), "k.py", Settings())[0]
    assert deep.bounds["loop"] == MAX_DEFAULT_LOOP_BOUND == 33
    assert any("not 2 x 64 stages + 1 = 129" in a for a in deep.assumptions), deep.assumptions
    assert not deep.loop_chosen  # still a default bound: smaller ones may be tried
    # Under the cap the ring wraps twice, as before; a pinned bound is never capped.
    assert build_models(kernel_source(BODY, init="self.num_stages = 16\n"), "k.py", Settings())[0].bounds["loop"] == 33
    pinned = build_models(kernel_source(BODY, init="self.num_stages = 64\n"), "k.py", Settings(loop_bound=40))[0]
    assert pinned.bounds["loop"] == 40 and not any("not 2 x" in a for a in pinned.assumptions)


def test_a_method_named_like_a_stage_count_is_called_not_read_as_one():
    # cuDNN's indexer forward calls `self.consumer_split_qstage(...)`: the name reads like a
    # stage count, and it was taken for an attribute of the default 2 stages, so the call (which
    # arrives on a barrier) was an unknown call receiving a barrier.
    from cutespin import ir
    from cutespin.config import Settings
    from cutespin.frontend import build_models
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
if cute.arch.thread_idx()[0] == 0:
    cute.arch.mbarrier_init(bar, 64)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
self.consumer_split_qstage(bar)
""", extra_class="""\
@cute.jit
def consumer_split_qstage(self, bar):
    cute.arch.mbarrier_arrive(bar)
""")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    assert not any("consumer_split_qstage" in a for a in m.assumptions)
    assert any(isinstance(o, ir.MbArrive) for o in ir.walk(m.processes[0].variants[0]))


OPTIONAL_RING = HEADER + """
from typing import Optional


class K:
    def __init__(self):
        self.num_stages_b = 0

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: Optional[cute.Tensor] = None):
        self.has_b = mB is not None
        if cutlass.const_expr(self.has_b):
            self.num_stages_b = 3
        self.kernel(mA, mB).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: Optional[cute.Tensor]):
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=6)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if cutlass.const_expr(self.has_b):
            pipe = pipeline.PipelineAsync.create(
                num_stages=self.num_stages_b,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
                barrier_storage=bars,
            )
            if warp_idx == 0:
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_stages_b)
                for i in cutlass.range(4):
                    pipe.producer_acquire(state)
                    pipe.producer_commit(state)
                    state.advance()
            else:
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_stages_b)
                for i in cutlass.range(4):
                    pipe.consumer_wait(state)
                    pipe.consumer_release(state)
                    state.advance()
"""


def test_a_ring_whose_stage_count_the_host_sets_for_an_optional_tensor_has_that_count():
    # flash-attn's MLA backward: `self.num_stages_dKr = 2` only `if const_expr(mdK is not None)`
    # (0 otherwise), and the kernel builds that ring under the same condition. Its count was
    # "not known (differs between the branches)" and the ring unmodeled; in each configuration
    # of the condition it is the number that side set.
    from cutespin import ir
    from cutespin.config import Settings
    from cutespin.frontend import build_models
    m = build_models(OPTIONAL_RING, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    inits = {len([o for o in ir.walk(v) if isinstance(o, ir.MbInit)]) for p in m.processes for v in p.variants}
    assert 6 in inits, inits  # the 3-stage ring's full and empty barriers, in the configuration that has it
