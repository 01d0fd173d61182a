"""Functions defined inside other functions read the names of the function they were defined in,
as Python closures do: a helper factory's closures (cuDNN SDPA's `make_sdpa_helpers(CFG)` returning
`@cute.jit` functions that read `CFG` and flags computed from it) and a kernel's local helpers
reading the kernel's variables at the time they are called. `getattr(record, "FLAG", default)` on
a dataclass configuration that never declares the flag is the default."""
from .test_raw_primitives import RING_SETUP, check, kernel, model
from ..kernels import line_of

FACTORY = """
from dataclasses import dataclass


@dataclass(frozen=True)
class Cfg:
    STAGES: int = 2
{extra_field}

def make_helpers(cfg):
    flip_on = int(getattr(cfg, "FLIP", 1))
    stages = cfg.STAGES

    @cute.jit
    def next_phase(k, phase):
        if cutlass.const_expr(flip_on):
            if k % stages == 0 and k != 0:
                return phase ^ 1
        return phase

    @cute.jit
    def has_work(n):
        return n // stages > 0

    return next_phase, has_work


CFG = Cfg()
_next_phase, _has_work = make_helpers(CFG)
"""

FACTORY_RING = RING_SETUP + """\
if _has_work(n):
    if warp == 0:
        phase = cutlass.Int32(1)
        for k in cutlass.range(n):
            phase = _next_phase(k, phase)
            while not prims.mbarrier_try_wait_parity(empty.subview(k % STAGES), phase):
                pass
            if prims.elect_sync():
                prims.mbarrier_arrive(full.subview(k % STAGES))
    else:
        phase = cutlass.Int32(0)
        for k in cutlass.range(n):
            phase = _next_phase(k, phase)
            while not prims.mbarrier_try_wait_parity(full.subview(k % STAGES), phase):
                pass
            if prims.elect_sync():
                prims.mbarrier_arrive(empty.subview(k % STAGES))
"""


def factory_kernel(extra_field: str = "") -> str:
    return kernel(FACTORY_RING, top=FACTORY.format(extra_field=extra_field))


def test_closures_of_a_helper_factory_read_its_configuration_and_verify(require_spin):
    src = factory_kernel()
    m = model(src)
    # Before, `flip_on` and `stages` were unknown names inside the closures: the phase was not
    # known, and `_has_work(n)` was not one condition for both warps.
    assert not m.unmodeled, [(u.line, u.why) for u in m.unmodeled]
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_getattr_of_a_declared_field_reads_it_and_a_phase_never_flipped_deadlocks(require_spin):
    # The configuration declares FLIP = 0: `getattr(cfg, "FLIP", 1)` is 0, nobody flips a phase.
    src = factory_kernel(extra_field="    FLIP: int = 0\n")
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    assert any(f.code == "CS101" for f in r.findings), [f.code for f in r.findings]


LOCAL_HELPER = RING_SETUP + """\
phase = cutlass.Int32(1 if warp == 0 else 0)


def wait_and_pass(k, mine, theirs):
    while not prims.mbarrier_try_wait_parity(mine.subview(k % STAGES), phase):
        pass
    if prims.elect_sync():
        prims.mbarrier_arrive(theirs.subview(k % STAGES))


for k in cutlass.range(n):
    if k % STAGES == 0 and k != 0:
        {flip}
    if warp == 0:
        wait_and_pass(k, empty, full)
    else:
        wait_and_pass(k, full, empty)
"""


def test_a_kernel_local_helper_reads_the_kernels_variables_as_they_are_when_called(require_spin):
    src = kernel(LOCAL_HELPER.format(flip="phase = phase ^ 1"))
    m = model(src)
    assert not m.unmodeled, [(u.line, u.why) for u in m.unmodeled]
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_a_kernel_local_helper_sees_a_phase_that_is_never_flipped(require_spin):
    # Read when the helper was defined, the phase would always be the first one: the flip below
    # must reach the helper for the first variant to verify and this one not to.
    src = kernel(LOCAL_HELPER.format(flip="pass"))
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    deadlock = next(f for f in r.findings if f.code == "CS101")
    assert deadlock.span.line == line_of(src, "try_wait_parity(mine"), deadlock.message
