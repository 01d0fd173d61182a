"""Which helpers and loop bodies only compute (`_calls_only_plain_code`, `_names_sync`): code
that may be checked as one trip past the interpretation budget, memoized, or skipped. A wrong
"plain" would drop synchronization from the model, so each widening has a case that stays out."""
import textwrap

from cutespin.frontend import interp as I
from cutespin.frontend.discover import discover

HEADER = """\
import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import nvvm as nvvm_ops
from cutlass.cute.arch import mbarrier_arrive as go
"""


def plain(helpers: str, name: str) -> bool:
    info = discover(HEADER + textwrap.dedent(helpers), None)
    return I._calls_only_plain_code(info.functions[name], info)


def test_a_docstring_or_comment_naming_synchronization_is_not_synchronization():
    # frost's steep-decay helper: "tcgen05 GEMMs read them" in the docstring of register math.
    assert plain('''
        def scale(x):
            """The tcgen05 GEMMs read what this returns, after the mbarrier wait."""
            return x * 2.0  # before the barrier
        ''', "scale")
    assert not plain('''
        def scale(x, bar):
            """Scales."""
            cute.arch.mbarrier_arrive(bar)
            return x * 2.0
        ''', "scale")


def test_inline_ptx_text_still_names_what_it_does():
    assert not plain('''
        def arrive(addr):
            cute.arch.inline_ptx("mbarrier.arrive.shared.b64 _, [$0];", read_only_args=[addr])
        ''', "arrive")


def test_a_library_function_passed_by_name_may_be_called_through_its_parameter():
    # frost's packed math: `_packed(nvvm_ops.add_packed_f32x2, a, b)` calls `op(a, b)`.
    src = '''
        def _packed(op, a, b):
            return op(a, b)

        def fadd2(a, b):
            return _packed(nvvm_ops.add_packed_f32x2, a, b)
        '''
    assert plain(src, "fadd2")
    assert not plain(src, "_packed")  # alone, `op` could be anything
    # A synchronizing library function imported under an innocent alias is no plain argument.
    assert not plain('''
        def _call(op, a):
            return op(a)

        def f(a):
            return _call(go, a)
        ''', "f")


def test_helpers_nested_several_levels_deep_are_plain():
    levels = "\n".join(f"def level{i}(x):\n    return level{i + 1}(x) + 1\n" for i in range(6))
    assert plain(levels + "def level6(x):\n    return x\n", "level0")
    deep_sync = levels + "def level6(x):\n    cute.arch.sync_threads()\n    return x\n"
    assert not plain(deep_sync, "level0")


def test_a_function_of_a_package_module_imported_by_name_is_resolved(tmp_path):
    # cuDNN's DSA: `from pkg.utils import primitives as sm90_ops` ... `sm90_ops.warp_reduce(x,
    # operator.add, width=4)` inside a row loop: plain when the package function is.
    from cutespin.frontend.project import Project
    pkg = tmp_path / "mypkg"
    (pkg / "utils").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "utils" / "__init__.py").write_text("")
    (pkg / "utils" / "primitives.py").write_text(
        "def warp_reduce(val, op, width=32):\n    return op(val, val)\n\n"
        "def arrive(bar):\n    cute.arch.mbarrier_arrive(bar)\n")
    kernel = pkg / "k.py"
    kernel.write_text(HEADER + "import operator\nfrom mypkg.utils import primitives as sm90_ops\n\n"
                      "def row_sum(x):\n    return sm90_ops.warp_reduce(x, operator.add, width=4)\n\n"
                      "def release(bar):\n    sm90_ops.arrive(bar)\n")
    project = Project.for_file(str(kernel))
    info = discover(kernel.read_text(), project.package)
    info.project = project
    assert I._calls_only_plain_code(info.functions["row_sum"], info, project=project)
    assert not I._calls_only_plain_code(info.functions["release"], info, project=project)
