"""`x = None; if const_expr(cfg): x = Holder(pipeline states...)` with `cfg` not foldable.

Package schedulers (cuDNN's MoE persistent scheduler) build their dynamic-scheduling state only
in the dynamic configuration and use it only under the same guard. Where the holder is None,
Python fails on the first attribute read, so code that reads it runs only where it is the object:
after the branch the variable keeps the object, and the pipeline states inside it stay known.
"""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import async_pipeline, kernel_source

HOLDER = '''

class SchedState:
    def __init__(self, producer_state, consumer_state):
        self.producer_state = producer_state
        self.consumer_state = consumer_state
'''

BODY = async_pipeline() + """\
state = None
if cutlass.const_expr(self.dynamic):
    state = SchedState(pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2),
                       pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2))
if cutlass.const_expr(self.dynamic):
    if warp_idx == 0:
        pipe.producer_acquire(state.producer_state)
        pipe.producer_commit(state.producer_state)
    if warp_idx == 1:
        pipe.consumer_wait(state.consumer_state)
        pipe.consumer_release(state.consumer_state)
"""


def source(body=BODY):
    return kernel_source(body, init="self.dynamic = mode_from_env()") + HOLDER


def test_a_config_guarded_holder_keeps_its_pipeline_states():
    m = build_models(source(), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    kr = api.check_source(source(), "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified", (kr.verdict, kr.findings, kr.unmodeled)


def test_a_holder_rebuilt_differently_on_a_runtime_branch_is_still_unknown():
    # Not a configuration guard: a runtime condition that picks between two holders.
    body = BODY.replace("if cutlass.const_expr(self.dynamic):\n    state =", "if mA[0] > 0:\n    state =", 1)
    m = build_models(source(body), "k.py", Settings())[0]
    assert {u.why for u in m.unmodeled} == {"the pipeline state is not known"}


# cuDNN's BatchNorm backward stages its inputs in shared memory only when its cache size is
# positive: `scx = None; if const_expr(KSR > 0): scx = smem.allocate_tensor(...)`, then, under the
# same guard, warp 0 fills it and, after a barrier, warp 1 reads it through the raw pointer.
STAGING = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
tidx, _, _ = cute.arch.thread_idx()
smem = cutlass.utils.SmemAllocator()
scx = None
if cutlass.const_expr(self.cache > 0):
    scx = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
if cutlass.const_expr(self.cache > 0):
    if warp_idx == 0:
        nvvm.store_ext(mA[tidx], scx.iterator + tidx, shared_space=nvvm.SharedSpace.shared_cta)
    cute.arch.sync_threads()
    if warp_idx == 1:
        mA[tidx] = nvvm.load_ext(scx.iterator + (tidx - 32), dtype=cutlass.Float32, count=1)
"""


def staging_source(body=STAGING):
    src = kernel_source(body, init="self.cache = cache_from_env()")
    return src.replace("import cutlass\n", "import cutlass\nimport cutlass.primitives as nvvm\n", 1)


def test_a_config_guarded_shared_buffer_keeps_its_accesses(require_spin):
    m = build_models(staging_source(), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    kr = api.check_source(staging_source(), "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified", (kr.verdict, kr.findings, kr.unmodeled)


def test_the_kept_buffer_still_races_without_the_barrier(require_spin):
    """The vector store's elements are not tracked (P16: the whole buffer, inexact), so the
    unordered pair is a possible race: not proven either way, and said so."""
    src = staging_source(STAGING.replace("    cute.arch.sync_threads()\n", ""))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert not kr.unmodeled
    assert kr.verdict == "inconclusive" and "possible data race" in kr.reason
