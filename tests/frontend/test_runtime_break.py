"""A `break` under a runtime condition in a loop that cannot synchronize (cuDNN's mask helpers:
`if c >= n_cols: break` over register values) is taken as the end of that trip: every trip is
checked, which only over-approximates the loop's loads and stores. A loop whose skipped trips
would synchronize stays unmodeled."""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source
from .test_roles_and_ops import INIT_BAR

MASK_HELPER = '''
@cute.jit
def masked_row(row, n_cols, width):
    elems = []
    for c in range(width):
        if c >= n_cols:
            break
        elems.append(row[c])
    return elems


@cute.jit
def arrive_each(bar, n):
    for c in range(4):
        if c >= n:
            break
        arrive_once(bar)


@cute.jit
def advance_until(st, n, width):
    for c in range(width):
        if c >= n:
            break
        st.count += 1
    return st


@cute.jit
def arrive_once(b):
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(b)

'''


def model(body: str):
    src = kernel_source(INIT_BAR + body).replace("\n\nclass K:", MASK_HELPER + "\n\nclass K:", 1)
    ms = build_models(src, "k.py", Settings())
    assert len(ms) == 1
    return ms[0]


def accesses(m, warp=0):
    p = next(p for p in m.processes if p.warp == warp)
    return [op for op in ir.walk(p.variants[-1]) if isinstance(op, ir.Access) and op.region.space == "smem"]


def test_a_register_only_loop_left_early_at_runtime_is_modeled():
    m = model("""\
n = mA.shape[0]
r = cute.make_rmem_tensor((8,), cutlass.Float32)
kept = masked_row(r, n, 8)
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bar)
cute.arch.mbarrier_wait(bar, 0)
""")
    assert not m.unmodeled
    assert any("leaves early under a runtime condition" in a for a in m.assumptions)


def test_a_memory_loop_left_early_checks_every_trips_accesses():
    m = model("""\
sX = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
for i in cutlass.range_constexpr(2):
    if mA[i] > 0.0:
        break
    sX[i * 32 + cute.arch.lane_idx()] = 1.0
""")
    assert not m.unmodeled
    assert len(accesses(m)) == 2  # both trips' stores, the one a break may skip included


def test_a_loop_whose_trips_synchronize_through_a_helper_stays_unmodeled():
    # The loop's own text names no barrier; the helper it calls arrives: running every trip
    # would arrive too often, so it is reported instead.
    m = model("""\
n = mA.shape[0]
if warp_idx == 0:
    arrive_each(bar, n)
""")
    assert [(u.construct, u.why) for u in m.unmodeled] == [("kernel body", "break/continue under a runtime condition")]


def test_a_loop_left_early_that_sets_an_attribute_stays_unmodeled():
    # Running every trip would leave `st.count` at 4 on every path; the attribute cannot be
    # forgotten after the loop the way a local can, so the break is reported.
    m = model("""\
n = mA.shape[0]
st = cute.make_rmem_tensor((1,), cutlass.Int32)
st = advance_until(st, n, 4)
""")
    assert [(u.construct, u.why) for u in m.unmodeled] == [("kernel body", "break/continue under a runtime condition")]
