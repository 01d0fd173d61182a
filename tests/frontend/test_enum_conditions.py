"""Uniform values compared with constants (`Choice.enum`, policy P14): every condition on the
same value agrees with the others, as lightmoe's `if const_expr(self.mode == "dual")` and
`if const_expr(self.mode in ("col", "dual"))` do in one kernel."""

import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model.promela import lower

from ..robustness.mutate import assert_promela_is_generated_only

TEMPLATE = """\
import cutlass
import cutlass.cute as cute
from cutlass import const_expr


class K:
    def __init__(self, mode):
        self.mode = mode

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        tile = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
        if warp_idx == 0:
            if const_expr(WRITE_WHEN):
                tile[lane] = 1.0
        if const_expr(SYNC_WHEN):
            cute.arch.sync_threads()
        if warp_idx == 1:
            if const_expr(WRITE_WHEN):
                mA[lane] = tile[lane]
"""


def _src(sync_when: str, write_when: str = 'self.mode == "dual"') -> str:
    return TEMPLATE.replace("SYNC_WHEN", sync_when).replace("WRITE_WHEN", write_when)


def _check(sync_when: str, write_when: str = 'self.mode == "dual"'):
    fr = api.check_source(_src(sync_when, write_when), "k.py", Settings(verify_fixes=False), with_fixes=False)
    [kr] = fr.kernels
    return kr


def test_comparisons_of_one_value_share_its_number():
    k = build_models(_src('self.mode in ("col", "dual")'), "k.py", Settings())[0]
    enums = {c.enum for p in k.processes for c in ir.walk(p.variants[0]) if isinstance(c, ir.Choice)}
    assert enums == {(0, frozenset({"dual"}), True), (0, frozenset({"col", "dual"}), True)}
    assert k.enum_values == [("col", "dual")]
    text = lower(k).text
    assert "if :: ue[0] = 1 :: ue[0] = 2 :: ue[0] = 3 fi;" in text  # col, dual, any other value
    assert_promela_is_generated_only(text)


@pytest.mark.parametrize("sync_when", ['self.mode in ("col", "dual")', 'self.mode != "row"',
                                       '"dual" == self.mode', 'self.mode not in ("row", "amax")'])
def test_a_barrier_on_every_value_that_writes_verifies(require_spin, sync_when):
    kr = _check(sync_when)
    assert kr.verdict == "verified", (kr.reason, [f.message for f in kr.findings])


@pytest.mark.parametrize("sync_when", ['self.mode in ("col", "amax")', 'self.mode != "dual"',
                                       'self.mode not in ("dual",)'])
def test_a_value_that_writes_without_the_barrier_races(require_spin, sync_when):
    kr = _check(sync_when)
    assert kr.verdict == "counterexample"
    assert [f.code for f in kr.findings] == ["CS201"]


# Order comparisons with integers (`warp < self.load_warp` beside `warp == self.load_warp`, as
# cudnn's SM120 dQ GEMM dispatches its producer and consumer warps) are checked at each constant
# and one value in each gap between them, so they agree with each other and with `==`.


def test_order_comparisons_share_the_value_and_cover_every_gap():
    k = build_models(_src("self.mode >= 1", "self.mode == 1"), "k.py", Settings())[0]
    assert k.enum_values == [(0, 1, 2)] and k.enum_closed == [True]
    text = lower(k).text
    assert "if :: ue[0] = 1 :: ue[0] = 2 :: ue[0] = 3 fi;" in text  # 0, 1, 2: no "other" value


@pytest.mark.parametrize("sync_when", ["self.mode >= 1", "0 < self.mode", "self.mode > 0"])
def test_an_order_comparison_that_holds_whenever_the_value_writes_verifies(require_spin, sync_when):
    kr = _check(sync_when, "self.mode == 1")
    assert kr.verdict == "verified", (kr.reason, [f.message for f in kr.findings])


@pytest.mark.parametrize("sync_when", ["self.mode > 1", "2 <= self.mode", "self.mode < 1"])
def test_an_order_comparison_that_misses_the_writing_value_races(require_spin, sync_when):
    kr = _check(sync_when, "self.mode == 1")
    assert kr.verdict == "counterexample"
    assert [f.code for f in kr.findings] == ["CS201"]
