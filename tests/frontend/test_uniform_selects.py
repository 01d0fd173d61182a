"""A class or function the host picks by a condition it cannot fold, handed to the kernel
(flash-attn's `TileScheduler = SingleTileVarlenScheduler` / `SingleTileScheduler` under
`if const_expr(mCuSeqlensQ is not None)`): a launch runs one of them, so each is checked as a
configuration of its own (P14) instead of the kernel calling an unknown object."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

SOURCE = """\
from typing import Optional

import cutlass
import cutlass.cute as cute


class Quiet:
    @staticmethod
    @cute.jit
    def signal(bars):
        pass


class Loud:
    @staticmethod
    @cute.jit
    def signal(bars):
        cute.arch.mbarrier_arrive(bars)


class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor, mOpt: Optional[cute.Tensor]):
{pick}
        self.kernel(mA, Sched).launch(grid=(1, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, Sched: cutlass.Constexpr):
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, num_elems=1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bars, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        with cute.arch.elect_one():
            Sched.signal(bars)
        cute.arch.mbarrier_wait(bars, 0)
"""
BRANCH = """\
        if cutlass.const_expr(mOpt is not None):
            Sched = Loud
        else:
            Sched = Quiet"""
IFEXP = """\
        Sched = Loud if cutlass.const_expr(mOpt is not None) else Quiet"""


def arrives_per_config(pick: str) -> list:
    m = build_models(SOURCE.format(pick=pick), "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    p = m.processes[0]
    return sorted((c.describe(), sum(isinstance(o, ir.MbArrive) for o in ir.walk(v)))
                  for c, v in zip(m.configs, p.variants))


def test_a_class_picked_on_the_host_is_a_configuration_per_class():
    assert arrives_per_config(BRANCH) == [("`cutlass.const_expr(mOpt is not None)` (line 24) = False", 0),
                                          ("`cutlass.const_expr(mOpt is not None)` (line 24) = True", 1)]


def test_a_conditional_expression_picking_a_class_is_a_configuration_per_class():
    assert [n for _, n in arrives_per_config(IFEXP)] == [0, 1]


def test_the_class_that_never_signals_deadlocks_in_its_configuration(require_spin):
    # Before, `Sched.signal(bars)` was a call on an unknown object and the wait's deadlock in
    # the `Quiet` build went unseen.
    k = api.check_source(SOURCE.format(pick=BRANCH), "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    assert k.verdict == "counterexample", k.reason
    assert [f.code for f in k.findings] == ["CS101"]
    assert k.findings[0].steps[0].what == \
        "takes the configuration `cutlass.const_expr(mOpt is not None)` (line 24) = False"


HOST_OBJECT = SOURCE.replace("def __call__(self, mA: cute.Tensor, mOpt: Optional[cute.Tensor]):",
                             "def __call__(self, mA: cute.Tensor, varlen_args):")
PICK_BY_ATTRIBUTE = """\
        varlen = varlen_args.mCuSeqlens is not None
        Sched = self.pick(varlen)"""
PICKER = """
    def pick(self, varlen):
        return Loud if varlen else Quiet
"""


def test_a_host_none_test_on_an_unfolded_value_picks_a_class_per_configuration():
    # quack's `varlen_m = varlen_args.mCuSeqlensM is not None` and `get_scheduler_class`: the test
    # has one answer per launch, so the class it picks is a configuration, not an unknown object.
    src = HOST_OBJECT.format(pick=PICK_BY_ATTRIBUTE).replace("    @cute.kernel", PICKER + "\n    @cute.kernel")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    p = m.processes[0]
    got = sorted((c.describe(), sum(isinstance(o, ir.MbArrive) for o in ir.walk(v)))
                 for c, v in zip(m.configs, p.variants))
    assert got == [("`varlen` (line 30) = False", 0), ("`varlen` (line 30) = True", 1)], got
