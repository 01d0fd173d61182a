"""A TMA copy issued before the expect that arms its barrier (cuDNN QSA's forward: the Q copy,
then `mbarrier_arrive_and_expect_tx(q_bar, q_bytes)`): PTX lets the transaction count go below
zero until the expect arrives, and the phase completes only when both have. With a byte count
that does not fold, the copy counts one unit into that later expect of its warp."""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

BODY = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
sQ = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 64)), 128)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp == 0:
    cute.copy(tma_atom, mA, sQ, tma_bar_ptr=bar)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, self.q_bytes)
else:
    WAIT
    x = sQ.load()
"""


def _check(wait: str):
    src = kernel_source(BODY.replace("WAIT", wait), init="self.q_bytes = q_bytes_from_host()",
                        params="tma_atom: cute.CopyAtom")
    src = src.replace("self.kernel(mA)", "self.kernel(mA, tma_atom)").replace(
        "def kernel(self, mA: cute.Tensor)", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom)")
    return src, api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_a_copy_before_its_expect_completes_the_phase_with_it(require_spin):
    _, k = _check("cute.arch.mbarrier_wait(bar, 0)")
    assert k.verdict == "verified", (k.reason, [f.message for f in k.findings])
    assert any("match the TMA copies that complete it" in a for a in k.assumptions), k.assumptions


def test_reading_without_the_wait_still_races_with_that_copy(require_spin):
    src, k = _check("pass")
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS201"]
