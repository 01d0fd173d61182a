"""`Optional[cute.Tensor]` kernel arguments (cuDNN's MoE GEMMs take `offs` or
`expert_token_sizes`, exactly one of them a tensor).

`x is None` on such an argument is a choice of the build, one value per launch, unless the launch
passes a tensor or a literal None. Taken as a tensor always, a helper's `if const_expr((a is None) ==
(b is None)): raise ValueError(...)` was reached on every path and the kernel was called uncompilable.
"""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

KERNEL = '''
from typing import Optional

import cutlass
import cutlass.cute as cute


@cute.jit
def check_one_of(a, b):
    if cutlass.const_expr((a is None) == (b is None)):
        raise ValueError("exactly one of a and b")


class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor, offs: Optional[cute.Tensor] = None, sizes: Optional[cute.Tensor] = None):
        self.kernel(mA, LAUNCH_OFFS, sizes).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, offs: Optional[cute.Tensor], sizes: cute.Tensor | None):
        check_one_of(offs, sizes)
        if cutlass.const_expr(offs is None):
            cute.arch.sync_threads()
'''


def model(launch_offs: str):
    return build_models(KERNEL.replace("LAUNCH_OFFS", launch_offs), "k.py", Settings())[0]


def _ops(m):
    return [op for p in m.processes for v in p.variants for op in ir.walk(v)]


def _choices(m):
    return [op for op in _ops(m) if isinstance(op, ir.Choice)]


def test_none_tests_on_optional_tensor_arguments_are_build_choices():
    m = model("offs")
    assert not m.unmodeled, [(u.construct, u.why) for u in m.unmodeled]
    choices = _choices(m)
    assert len(choices) == len(m.processes) == 2  # one in each warp, the same value for both
    assert {c.shared for c in choices} != {None} and len({c.shared for c in choices}) == 1
    assert {c.compile_time for c in choices} == {"build"}
    assert any("takes the side that traces" in a for a in m.assumptions)


def test_a_literal_none_at_the_launch_is_none():
    m = model("None")
    assert not m.unmodeled
    assert not _choices(m)  # `offs is None` folded: the barrier is always there
    assert any(isinstance(op, ir.NamedBarrier) for op in _ops(m))


def test_a_tensor_at_the_launch_is_not_none():
    m = model("mA")
    assert not m.unmodeled
    assert any("takes the side that traces" in a for a in m.assumptions)  # `sizes` may still be None
    assert not _choices(m)
    assert not any(isinstance(op, ir.NamedBarrier) for op in _ops(m))
