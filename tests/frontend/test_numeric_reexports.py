"""The DSL's numeric constructors under every module that re-exports them.

`Int32` is defined in `cutlass.base_dsl.typing` and re-exported by `cutlass`, `cutlass.cute`,
`cutlass.cute.typing` and `cutlass.cutlass_dsl`; packages import it from any of them (cudnn's
DSA backward kernels: `from cutlass.cute.typing import Int32`). `Int32(0)` is its argument
whichever import named it, so a lane test `tidx == Int32(0)` picks one thread and a condition on
a kernel argument compared with `Int32(k)` is CTA-uniform.
"""
import pytest

from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source

SETTINGS = Settings(verify_fixes=False)

# A barrier under a condition on a kernel argument (every warp takes the same side); then only
# thread 0 writes the flag, and every thread reads it after the barrier.
BODY = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Int32, cute.make_layout(128))
tidx, _, _ = cute.arch.thread_idx()
if mA.shape[0] > Int32(4):
    cute.arch.sync_threads()
if tidx == Int32(0):
    sBuf[0] = Int32(7)
cute.arch.sync_threads()
x = sBuf[0]
"""


def check(import_line: str):
    src = import_line + "\n" + kernel_source(BODY)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return k


@pytest.mark.parametrize("import_line", [
    "from cutlass import Int32",
    "from cutlass.cute.typing import Int32",
    "from cutlass.cutlass_dsl import Int32",
    "from cutlass.base_dsl.typing import Int32",
    "from cutlass.cute import Int32",
])
def test_conditions_on_a_reexported_int32_fold(require_spin, import_line):
    k = check(import_line)
    assert k.verdict == "verified", (import_line, k.verdict, k.reason, [f.message for f in k.findings])


def test_a_constructor_the_dsl_does_not_export_stays_unknown(require_spin):
    # The same kernel with another package's `Int32`: its result is not known, so any warp may
    # take either side of each condition.
    k = check("from mypkg.typing import Int32")
    assert k.verdict == "counterexample", (k.verdict, k.reason)


SCHEDULER = '''\
from cutlass.cutlass_dsl import const_expr


class Scheduler:
    def __init__(self, params):
        self.params = params

    @property
    def scenario(self):
        return self.params

    @scenario.setter
    def scenario(self, value):
        self.params = value

    @cute.jit
    def step(self):
        if const_expr(self.scenario == "2Dx2D"):
            cute.arch.sync_threads()

'''


def _scheduler_model():
    from cutespin.frontend import build_models
    src = kernel_source('''\
        sched = Scheduler("2Dx3D")
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            sched.step()
        cute.arch.sync_threads()
        ''').replace("\n\nclass K:", "\n\n" + SCHEDULER + "\nclass K:", 1)
    return build_models(src, "k.py", SETTINGS)[0]


def test_const_expr_imported_from_cutlass_dsl_and_a_property_with_a_setter_fold():
    # cuDNN's MoE scheduler: `const_expr` comes from `cutlass.cutlass_dsl`, and `scenario` is a
    # property with a setter defined after it. The condition folds to False: warp 0 does not
    # sync alone (before, it was a runtime branch per warp, and the setter made the attribute a
    # bound method).
    from cutespin import ir
    m = _scheduler_model()
    p0 = next(p for p in m.processes if p.warp == 0)
    ops = list(ir.walk(p0.variants[0]))
    assert not any(isinstance(o, ir.Choice) for o in ops), ops
    assert sum(isinstance(o, ir.NamedBarrier) for o in ops) == 1
