"""A loop over `range(b.left, b.right)`, where `b` is a record a package helper returns (cuDNN
SDPA's `KvLoopBounds`), makes `b.right` that loop's trip count wherever it is read, as a plain
name bound does: a warp that never runs the loop but waits on the barrier its last trip signals,
at a parity computed from `b.right`, waits on a parity the configuration knows."""
from .test_raw_primitives import RING_SETUP, check, kernel, model
from ..kernels import line_of

TOP = """
from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    left: cutlass.Int32
    right: cutlass.Int32
"""

BODY = RING_SETUP + """\
b = Bounds(mA.shape[1], mA.shape[0])
if warp == 0:
    for k in cutlass.range(b.left, b.right):
        if prims.elect_sync():
            prims.mbarrier_arrive(full.subview(k & 1))
else:
    last = b.right - 1
    while not prims.mbarrier_try_wait_parity(full.subview(last & 1), {parity}):
        pass
"""


def test_a_parity_computed_from_a_record_loop_bound_is_the_configurations(require_spin):
    src = kernel(BODY.format(parity="(last >> 1) & 1"), top=TOP)
    m = model(src)
    # Before, `b.right` stayed unknown outside the loop: "the parity is not known".
    assert not m.unmodeled, [(u.line, u.why) for u in m.unmodeled]
    assert any("starts at 0" in a for a in m.assumptions), m.assumptions
    r = check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])


def test_waiting_one_phase_past_the_last_trip_deadlocks(require_spin):
    src = kernel(BODY.format(parity="((last >> 1) + 1) & 1"), top=TOP)
    r = check(src)
    assert r.verdict == "counterexample", r.reason
    deadlock = next(f for f in r.findings if f.code == "CS101")
    assert deadlock.span.line == line_of(src, "try_wait_parity(full"), deadlock.message
