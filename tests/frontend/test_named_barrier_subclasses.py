"""Package subclasses of `pipeline.NamedBarrier` and the raw NVVM barrier ops.

cudnn's block-sparse attention backward defines `class _WarpGroupBarrier(pipeline.NamedBarrier)`
whose `arrive_and_wait` calls `nvvm.barrier_cta_sync(...)` directly. Such an object used to be
an unknown value whose methods were dropped without a word: the barrier vanished from the model
and a false race followed."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

IMPORTS = """\
from cutlass.cutlass_dsl import dsl_user_op
from cutlass._mlir.dialects import nvvm
from cutlass.cute.typing import Int32
"""

OVERRIDING = """\


class GroupBarrier(pipeline.NamedBarrier):
    \"\"\"A named barrier for some warps of the CTA, without the aligned promise.\"\"\"

    @dsl_user_op
    def arrive_and_wait(self, *, loc=None, ip=None):
        nvvm.barrier_cta_sync(
            Int32(self.barrier_id).ir_value(loc=loc, ip=ip),
            thread_count=Int32(self.num_threads).ir_value(loc=loc, ip=ip),
            aligned=False,
            loc=loc,
            ip=ip,
        )
"""

INHERITING = """\


class GroupBarrier(pipeline.NamedBarrier):
    \"\"\"Only a name of its own: every method is the library's.\"\"\"

    def describe(self):
        return "group"
"""

OWN_INIT = """\


class GroupBarrier(pipeline.NamedBarrier):
    def __init__(self, group):
        super().__init__(barrier_id=2 + group, num_threads=64)
"""

# Warp 0 fills the buffer; both warps then read what the other lane wrote (warp 1 reads warp 0's
# half), which is ordered only by the barrier.
EXCHANGE = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
tidx, _, _ = cute.arch.thread_idx()
if warp_idx == 0:
    buf[tidx] = 1.0
self.exchange_barrier.arrive_and_wait()
x = buf[63 - tidx]
"""


def source(classes: str, body: str = EXCHANGE, init: str = "self.exchange_barrier = GroupBarrier(barrier_id=2, "
                                                                "num_threads=64)\n") -> str:
    src = kernel_source(body, init=init)
    return src.replace("from cutlass.cute.nvgpu import cpasync\n",
                       "from cutlass.cute.nvgpu import cpasync\n" + IMPORTS + classes, 1)


def named(m):
    return [(op.barrier_id, op.threads, op.wait) for p in m.processes for op in ir.walk(p.variants[0])
            if isinstance(op, ir.NamedBarrier)]


def check(src):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_an_overriding_subclass_runs_its_override_on_the_library_fields(require_spin):
    src = source(OVERRIDING)
    m = build_models(src, "k.py", Settings())[0]
    assert m.unmodeled == []
    assert named(m) == [(2, 64, True)] * 2  # the override's nvvm.barrier_cta_sync, in both warps
    r = check(src)
    assert r.verdict == "verified", [f.message for f in r.findings]


def test_a_subclass_without_the_method_gets_the_library_one(require_spin):
    src = source(INHERITING)
    m = build_models(src, "k.py", Settings())[0]
    assert m.unmodeled == [] and named(m) == [(2, 64, True)] * 2
    assert check(src).verdict == "verified"


def test_without_the_barrier_the_same_kernel_races(require_spin):
    """What the model had when the subclass's object was dropped: the write races the reads."""
    src = source(OVERRIDING, body=EXCHANGE.replace("self.exchange_barrier.arrive_and_wait()\n", ""))
    r = check(src)
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"


def test_a_subclass_built_by_its_own_init_is_unmodeled_not_dropped():
    """Its `__init__` runs on a record; the library's `arrive_and_wait` on that record is not
    followed, and says so (CS901) instead of vanishing."""
    src = source(OWN_INIT, init="self.exchange_barrier = GroupBarrier(0)\n")
    m = build_models(src, "k.py", Settings())[0]
    assert named(m) == []
    assert [(u.construct, u.line) for u in m.unmodeled][:1] == [
        ("GroupBarrier.arrive_and_wait", line_of(src, "self.exchange_barrier.arrive_and_wait()"))]


def test_a_subclass_of_a_pipeline_that_cannot_be_built_is_unmodeled_when_it_synchronizes():
    src = source("\n\nclass Gate(pipeline.PipelineAsync):\n    pass\n",
                 body=EXCHANGE.replace("self.exchange_barrier", "gate"),
                 init="pass\n").replace("tidx, _, _ = cute.arch.thread_idx()\n",
                                        "tidx, _, _ = cute.arch.thread_idx()\n        gate = Gate()\n", 1)
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.construct, u.line) for u in m.unmodeled][:1] == [
        ("Gate.arrive_and_wait", line_of(src, "gate.arrive_and_wait()"))]


RAW = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
tidx, _, _ = cute.arch.thread_idx()
if warp_idx == 0:
    buf[tidx] = 1.0
    nvvm.barrier_cta_arrive(1, 64)
else:
    nvvm.barrier_cta_sync(barrier_id=1, thread_count=64)
    x = buf[tidx - 32]
nvvm.barrier_cta_sync()
buf[tidx] = 2.0
"""


def test_raw_nvvm_barriers_are_bar_arrive_and_bar_sync(require_spin):
    src = source("", body=RAW, init="pass\n")
    m = build_models(src, "k.py", Settings())[0]
    assert m.unmodeled == []
    assert sorted(named(m), key=str) == sorted([(1, 64, False), (0, None, True), (1, 64, True), (0, None, True)],
                                               key=str)
    assert check(src).verdict == "verified"
    # Without the final CTA-wide sync, warp 0's second write races warp 1's read.
    r = check(source("", body=RAW.replace("nvvm.barrier_cta_sync()\n", ""), init="pass\n"))
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"
