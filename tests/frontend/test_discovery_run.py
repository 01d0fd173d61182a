"""The discovery run, which finds the runtime loops the trip-count configurations vary, takes one
trip per loop (the configurations take every count up to the bound): it is the cheapest run that
reaches every loop but one that only a later trip of an enclosing loop reaches, and such a loop
is still modeled (at the bound, stated). A warp whose discovery run is the same as its run in the
one-trip configuration is not interpreted again."""
import pytest

from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.frontend import interp as I

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

# Warp 0 fills the buffer on every trip but the first, inside a loop that only those trips
# reach; warp 1 reads it after the barrier.
LATE_LOOP = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp_idx == 0:
    for k in cutlass.range(mA.shape[0]):
        if k > 0:
            for j in cutlass.range(mA.shape[1]):
                sBuf[lane] = 1.0
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""


def test_a_loop_only_a_later_trip_reaches_is_modeled_at_the_bound_and_said_so(require_spin):
    src = kernel_source(LATE_LOOP)
    m = build_models(src, "k.py", SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    late = [a for a in m.assumptions if "met only past the first trip" in a]
    assert len(late) == 1 and "`mA.shape[1]`" in late[0], m.assumptions
    assert api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels[0].verdict == "verified"


def test_a_race_inside_a_loop_only_a_later_trip_reaches_is_found(require_spin):
    src = kernel_source(LATE_LOOP.replace("cute.arch.sync_threads()\n", ""))
    r = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels[0]
    assert r.verdict == "counterexample", r.reason
    assert [f.code for f in r.findings] == ["CS201"]
    lines = {r.findings[0].span.line} | {rel.span.line for rel in r.findings[0].related}
    assert line_of(src, "sBuf[lane] = 1.0") in lines, r.findings[0].message


RING = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
{setup}
for k in cutlass.range({bound}):
    if warp_idx == 0:
        sBuf[lane] = 1.0
    cute.arch.sync_threads()
    if warp_idx == 1:
        mA[lane] = sBuf[lane]
    cute.arch.sync_threads()
"""


@pytest.fixture
def warp_runs(monkeypatch):
    """(trip counts, warp) of every warp run the interpreter makes."""
    runs = []
    run_body = I.KernelInterp.run_body

    def counting(self, node):
        runs.append((tuple(sorted(self.ctx.trips.items())), self.ctx.warp, self.ctx.discovering))
        return run_body(self, node)

    monkeypatch.setattr(I.KernelInterp, "run_body", counting)
    return runs


def test_the_one_trip_configuration_is_the_discovery_run(warp_runs):
    m = build_models(kernel_source(RING.format(setup="", bound="mA.shape[0]")), "k.py", SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    assert sorted(c.trips["mA.shape[0]"] for c in m.configs) == [1, 2, 3]
    # Two warps: the discovery run, then the configurations of 2 and 3 trips; not the one of 1.
    assert [(trips, discovering) for trips, _, discovering in warp_runs] == \
        [((), True)] * 2 + [((("mA.shape[0]", 2),), False)] * 2 + [((("mA.shape[0]", 3),), False)] * 2


def test_a_warp_that_read_a_loop_bound_before_its_loop_runs_the_configuration_again(warp_runs):
    # Warp 0 reads `n` (as the loop's own bound) before the loop is met: in the configuration it
    # is a number from the start, so its discovery run is not its run there. Warp 1 reads it
    # after warp 0 met the loop, as the number the configuration has: its run is kept.
    src = kernel_source(RING.format(setup="n = mA.shape[0]", bound="n"))
    m = build_models(src, "k.py", SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    one_trip = [w for trips, w, discovering in warp_runs if trips == (("n", 1),)]
    assert one_trip == [0]
    assert api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels[0].verdict == "verified"
