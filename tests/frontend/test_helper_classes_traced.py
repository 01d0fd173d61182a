"""Package helper classes the way cuDNN's frost tile DSL writes them: a constructor that takes a
register vector or an element count (`RegTile(vec_or_n, dtype=None, *, size=None)`), and a zero
of the element type chosen by identity (`dtype is cutlass.Float32`)."""
from cutespin.config import Settings
from cutespin.frontend import build_models

SRC = """\
import cutlass
import cutlass.cute as cute


class RegTile:
    def __init__(self, vec_or_n, dtype=None, *, size: int = None):
        if isinstance(vec_or_n, int):
            self._vec = tuple(_zero_py(dtype) for _ in range(vec_or_n))
            self._size = vec_or_n
        else:
            self._vec = vec_or_n
            self._size = size


def _zero_py(dtype):
    if dtype is cutlass.Float32:
        return cutlass.Float32(0.0)
    raise TypeError(f"_zero_py: unsupported dtype {dtype!r}")


@cute.kernel
def kernel(mA: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    r = RegTile(mA[tidx], size=4)
    z = RegTile(CALL)
    cute.arch.sync_threads()
"""


def _model(call: str):
    return build_models(SRC.replace("CALL", call), "k.py", Settings())[0]


def test_a_side_that_raises_while_tracing_brings_no_runtime_loop_with_it():
    # `RegTile(vec, size=4)` on a loaded value: `isinstance(vec_or_n, int)` does not fold, the
    # int side raises (dtype None), so the other side is the one compiled. Its `range(vec_or_n)`
    # is no loop of the kernel: no trip-count configurations, and the kernel body is modeled.
    m = _model("8, cutlass.Float32")
    assert not m.unmodeled, m.unmodeled
    assert not any("runtime loop bound `vec_or_n`" in a for a in m.assumptions), m.assumptions
    assert any("`isinstance(vec_or_n, int)`" in a and "takes the side that traces" in a for a in m.assumptions)


def test_a_dtype_compared_by_identity_is_the_same_class_named_twice():
    # `_zero_py(cutlass.Float32)` returns on its first test; with `is` taken as false between two
    # spellings of Float32 it would reach the raise and the kernel body would not trace.
    assert not _model("8, cutlass.Float32").unmodeled
    # A dtype the helper does not support raises while tracing: the kernel does not compile.
    bad = _model("8, cutlass.Int8")
    assert [u.construct for u in bad.unmodeled] == ["kernel body"]
    assert "raises while the kernel is traced" in bad.unmodeled[0].why


def test_the_type_of_a_value_is_plain_but_of_a_pipeline_state_is_reported():
    # `type(raw)` of a descriptor (frost's `desc_opaque`) reads nothing; `type(state)(...)` would
    # construct a pipeline state the model cannot follow, so the call is unmodeled, not dropped.
    src = """\
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline


@cute.kernel
def kernel(mA: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64), 128)
    t = type(buf)
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    cls = type(st)
    cute.arch.sync_threads()
"""
    m = build_models(src, "k.py", Settings())[0]
    assert [(u.line, u.construct) for u in m.unmodeled] == [(12, "type")], m.unmodeled
