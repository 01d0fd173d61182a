"""A long trail is cut to its last `findings.MAX_STEPS` steps, which keep their own numbers: the
first step shown says how many came before it (the hover and `show trace` list no step 1 that
is not the trail's first)."""
from cutespin import api, findings
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

# Warp 0 passes 30 sync_threads alone (its barrier counts 32 threads), then waits on a phase
# nobody completes: a deadlock after more steps than a finding shows.
LONG = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    for i in cutlass.range_constexpr(30):
        cute.arch.barrier(barrier_id=1, number_of_threads=32)
    cute.arch.mbarrier_wait(bar, 0)
"""


def test_a_long_trail_shows_its_last_steps_under_their_own_numbers(require_spin):
    src = kernel_source(LONG, threads=32)
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    assert k.verdict == "counterexample", k.reason
    (f,) = k.findings
    assert f.code == "CS101" and f.span.line == line_of(src, "mbarrier_wait(bar, 0)")
    numbers = [int(r.message.split(":", 1)[0].removeprefix("step ")) for r in f.related
               if r.message.startswith("step ")]
    assert len(f.steps) == findings.MAX_STEPS
    assert [s.index for s in f.steps] == list(range(f.steps[0].index, f.steps[0].index + findings.MAX_STEPS))
    assert f.steps[0].index > 1 and numbers[0] == f.steps[0].index and numbers[-1] == f.steps[-1].index
