"""Accesses through a pointer a per-lane offset into a buffer (P16).

cuDNN's SM107 MXFP8 attention backward keeps its softmax statistics in one flat array of two
slots and writes them at `sStats_raw.subview(slot_base + OFF + col)`: `col` is the lane's column
and `slot_base` a runtime slot. Where such an access lands is not known, not even its slot, so a
race through it is a possible one (inconclusive), never a counterexample; per-lane offsets that
all fold keep the access as it was (the whole buffer, as a definite access).
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

BODY = """\
buf = cutlass.Array(cutlass.Float32, 64, space=cutlass.AddressSpace.smem)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
slot = OFFSET
if warp_idx == 0:
    buf.subview(slot + lane).store(cutlass.Float32(1.0))
else:
    x = buf.load(READ + lane)
"""


def check(offset: str, read: str = "cutlass.Int32(32)"):
    src = kernel_source(BODY.replace("OFFSET", offset).replace("READ", read))
    (k,) = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels
    return src, k


def test_a_store_at_a_runtime_slot_plus_the_lane_is_a_possible_race_only(require_spin):
    src, k = check("mA[0] * 32")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert "element index is not known" in k.reason
    assert f"line {line_of(src, 'buf.subview(slot + lane)')}" in k.reason
    assert all(f.code == "CS201" and f.possible for f in k.findings)


def test_a_store_at_known_per_lane_offsets_read_by_another_warp_is_a_counterexample(require_spin):
    _, k = check("0", read="cutlass.Int32(0)")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible
