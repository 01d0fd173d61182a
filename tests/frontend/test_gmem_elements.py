"""Elements of global tensors named by a folded index (`mFlags[3]`, `mData[tidx]`).

Global tensors are tracked whole, but an element the kernel names by a constant index on the
argument itself is a region of its own, and an access at known per-lane indices touches only the
named elements among its lanes' elements: `mData[2000]` read by one warp does not race with
`mData[tidx]` written by another. A view, a pointer or a helper's parameter stays the whole tensor.
"""
from pathlib import Path

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

SETTINGS = Settings(verify_fixes=False)
SAMPLE = (Path(__file__).parents[2] / "samples" / "gmem_flag_ok.py").read_text()
PRODUCER_STORE = "            mData[tidx] = mSrc[tidx] * 2.0\n"


def with_read(read: str):
    """gmem_flag_ok.py with thread 0 of the producer CTA reading `read` right after every thread
    of that CTA stored its element of mData (no barrier between)."""
    src = SAMPLE.replace(PRODUCER_STORE, PRODUCER_STORE + f"            if tidx == 0:\n                x = {read}\n")
    assert src != SAMPLE
    return src


def verdict(src):
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return k


def test_a_constant_element_no_other_warp_writes_is_its_own_region(require_spin):
    src = with_read("mData[2000]")
    k = verdict(src)
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])
    assert any("constant indices into global tensor mData name distinct elements" in a for a in k.assumptions)
    m = build_models(src, "k.py", SETTINGS)[0]
    names = {op.region.name for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.Access)}
    assert "global mData[2000]" in names


def test_a_constant_element_another_warp_writes_is_a_race(require_spin):
    k = verdict(with_read("mData[40]"))  # warp 1 writes elements 32..63
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible


def test_a_view_of_the_argument_is_the_whole_tensor(require_spin):
    src = with_read("view[2000]").replace(PRODUCER_STORE, PRODUCER_STORE.replace(
        "mData[tidx]", "view = cute.domain_offset((0,), mData)\n            mData[tidx]"))
    k = verdict(src)
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    m = build_models(src, "k.py", SETTINGS)[0]
    names = {op.region.name for p in m.processes for op in ir.walk(p.variants[-1]) if isinstance(op, ir.Access)}
    assert not any(n.startswith("global mData[") for n in names), names


def test_a_rebound_argument_name_is_the_whole_tensor(require_spin):
    src = with_read("mData[2000]").replace("        flag_ptr = mFlag.iterator\n",
                                           "        flag_ptr = mFlag.iterator\n        mData = mData\n")
    k = verdict(src)
    assert k.verdict == "counterexample", (k.verdict, k.reason)
