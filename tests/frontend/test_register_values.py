"""One-element register tensors across loops checked as one trip.

cuDNN's deterministic top-k keeps its CTA barrier's phase in a register, `sync_phase[0]`, flips it
at every `cta_sync`, and between two syncs pads a shared buffer in a loop too long to unroll (one
trip at an unknown index, P9). What that loop computes is not known after it; a register it never
names keeps its value, so the next wait's parity is known.
"""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source

PADDED = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=1)
sBuf = smem.allocate_tensor(cutlass.Int32, cute.make_layout(512))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    cute.arch.mbarrier_init(bars, 64)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
sync_phase = cute.make_rmem_tensor((1,), cutlass.Int32)
sync_phase[0] = 0
phase = sync_phase[0]
cute.arch.mbarrier_arrive(bars)
cute.arch.mbarrier_wait(bars, phase)
sync_phase[0] = phase ^ 1
for i in cutlass.range(512):
    sBuf[i] = 0
    LOOP_EXTRA
phase = sync_phase[0]
cute.arch.mbarrier_arrive(bars)
cute.arch.mbarrier_wait(bars, phase)
sync_phase[0] = phase ^ 1
"""


def model(extra: str = "pass"):
    return build_models(kernel_source(PADDED.replace("LOOP_EXTRA", extra)), "k.py", Settings())[0]


def test_a_register_the_long_loop_never_names_keeps_its_value(require_spin):
    m = model()
    assert not m.unmodeled, m.unmodeled
    assert any("checked as one trip" in a for a in m.assumptions), m.assumptions
    src = kernel_source(PADDED.replace("LOOP_EXTRA", "pass"))
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert kr.verdict == "verified", (kr.verdict, kr.reason)


def test_a_register_the_long_loop_writes_is_not_known_after_it():
    m = model("sync_phase[0] = i")
    assert [u.why for u in m.unmodeled] == ["the parity is not known (register value)"], m.unmodeled


def test_a_register_passed_to_a_call_in_the_long_loop_is_not_known_after_it():
    m = model("cute.autovec_copy(sBuf, sync_phase)")
    assert any("the parity is not known" in u.why for u in m.unmodeled), m.unmodeled



def test_a_register_a_closure_writes_in_a_loop_left_early_is_not_known_after_it():
    # A runtime `break` may end the loop before any trip ran `bump()`: the phase is 0 or 1.
    src = kernel_source(PADDED.replace(
        "for i in cutlass.range(512):\n    sBuf[i] = 0\n    LOOP_EXTRA",
        "def bump():\n    sync_phase[0] = 1\nfor i in cutlass.range(mA.shape[0], unroll=1):\n"
        "    if mA[i] == 0:\n        break\n    bump()"))
    m = build_models(src, "k.py", Settings())[0]
    assert any("the parity is not known" in u.why for u in m.unmodeled), m.unmodeled
