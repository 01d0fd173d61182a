"""Paths the DSL's own trace cannot take (NotCompiled).

A pipeline method called on a variable that is None there, or a call to a name that a sibling
module of the package does not define, fails when the DSL traces the kernel: no kernel is
compiled along that path. A `const_expr` branch side or a configuration that reaches one is left
out with a stated assumption; the other sides are still checked. Where both sides of a runtime
branch are traced, the failure is unmodeled (the kernel does not compile as written).
"""
import textwrap

import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import async_pipeline, kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)


def build(body, init=""):
    src = kernel_source(async_pipeline() + textwrap.dedent(body), init=init)
    return src, build_models(src, "k.py", SETTINGS)[0]


# `opt` exists only when `self.use_opt`; the kernel uses it only when `self.use_extra` (which the
# real kernel sets only together with use_opt). Each flag's sides advance a state differently, so
# each is a configuration; `use_opt=False, use_extra=True` does not trace.
OPTIONAL_PIPELINE = """\
opt = None
opt_bars = smem.allocate_array(cutlass.Int64, num_elems=4)
if cutlass.const_expr(self.use_opt):
    opt = pipeline.PipelineAsync.create(
        num_stages=2,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        barrier_storage=opt_bars,
    )
if warp_idx == 0:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
    if cutlass.const_expr(self.use_extra):
        opt.producer_acquire(st)
        opt.producer_commit(st)
        st.advance()
    pipe.producer_acquire(st)
    pipe.producer_commit(st)
if warp_idx == 1:
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
    if cutlass.const_expr(self.use_extra):
        opt.consumer_wait(st)
        opt.consumer_release(st)
        st.advance()
    pipe.consumer_wait(st)
    pipe.consumer_release(st)
"""


def test_a_configuration_calling_a_pipeline_method_on_none_is_left_out_and_stated():
    src, m = build(OPTIONAL_PIPELINE, init="self.use_opt = use_opt\nself.use_extra = use_extra")
    assert not m.unmodeled, m.unmodeled
    labels = [" ".join(c.cond_labels) for c in m.configs]
    # use_extra=True needs opt: only use_opt=True remains with it.
    assert len(m.configs) == 3, labels
    assert not any("use_opt" in lb and "= False" in lb.split("use_extra")[0] and "use_extra` (line" in lb
                   and lb.endswith("True") for lb in labels)
    line = line_of(src, "opt.producer_acquire(st)")
    dropped = [a for a in m.assumptions if "not checked" in a]
    assert len(dropped) == 1, m.assumptions
    assert f"line {line}: `opt.producer_acquire` is called on None" in dropped[0]
    assert "self.use_opt" in dropped[0] and "= False" in dropped[0]


def test_the_configurations_that_trace_are_still_checked(require_spin):
    # The producer of `opt` commits once, the consumer waits twice: a deadlock in every
    # configuration that uses `opt`, which the left-out one must not hide.
    body = OPTIONAL_PIPELINE.replace("        opt.consumer_release(st)\n        st.advance()\n",
                                     "        opt.consumer_release(st)\n        st.advance()\n"
                                     "        opt.consumer_wait(st)\n")
    src = kernel_source(async_pipeline() + body, init="self.use_opt = use_opt\nself.use_extra = use_extra")
    result = api.check_source(src, "k.py", SETTINGS, with_fixes=False)
    (k,) = result.kernels
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert k.findings[0].code == "CS101"
    assert k.findings[0].span.line == line_of(src, "opt.consumer_wait(st)", 2)


def test_a_const_expr_side_that_does_not_trace_is_dropped_for_the_other_side():
    src, m = build("""\
        gone = None
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if cutlass.const_expr(self.wide):
                gone.producer_acquire(st)
            else:
                pipe.producer_acquire(st)
                pipe.producer_commit(st)
        """, init="self.wide = wide")
    assert not m.unmodeled, m.unmodeled
    p0 = next(p for p in m.processes if p.warp == 0)
    assert not any(isinstance(o, ir.Choice) for v in p0.variants for o in ir.walk(v))
    assert [type(o).__name__ for v in p0.variants for o in ir.walk(v)].count("MbWait") == 1
    (a,) = [a for a in m.assumptions if "takes the side that traces" in a]
    assert "const_expr(self.wide)" in a and f"line {line_of(src, 'gone.producer_acquire')}" in a


def test_a_runtime_branch_that_does_not_trace_is_unmodeled():
    src, m = build("""\
        gone = None
        if warp_idx == 0:
            st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
            if mA.shape[0] > 4:
                gone.producer_acquire(st)
        """)
    assert any("called on None" in u.why and "does not compile as written" in u.why for u in m.unmodeled), \
        m.unmodeled


def test_none_that_is_not_a_pipeline_method_call_is_not_a_trace_failure():
    # `x.fill(0)` on None: not a synchronization method, so no path is dropped for it.
    _, m = build("""\
        gone = None
        if cutlass.const_expr(self.wide):
            gone.fill(0)
        """, init="self.wide = wide")
    assert not any("traces" in a for a in m.assumptions), m.assumptions


@pytest.fixture
def package(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def zero(t):\n    t.fill(0)\n")
    return pkg


def kernel_in(package, body: str, init: str) -> tuple[str, str]:
    src = kernel_source(async_pipeline() + textwrap.dedent(body), init=init).replace(
        "from cutlass.cute.nvgpu import cpasync\n", "from cutlass.cute.nvgpu import cpasync\nfrom . import helpers as utils\n")
    path = package / "k.py"
    path.write_text(src)
    return src, str(path)


def test_a_name_the_sibling_module_does_not_define_drops_its_const_expr_side(package):
    src, path = kernel_in(package, """\
        sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
        if cutlass.const_expr(self.wide):
            utils.fill_oob(sBuf, None)
        else:
            utils.zero(sBuf)
        """, init="self.wide = wide")
    m = build_models(src, path, SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    (a,) = [a for a in m.assumptions if "takes the side that traces" in a]
    assert "`pkg.helpers.fill_oob` is not defined in" in a and "helpers.py" in a


def test_a_name_the_module_may_create_is_not_taken_as_undefined(package):
    (package / "helpers.py").write_text("from .more import *\n")
    (package / "more.py").write_text("def fill_oob(t, v):\n    pass\n")
    src, path = kernel_in(package, """\
        sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
        if cutlass.const_expr(self.wide):
            utils.fill_oob(sBuf, None)
        """, init="self.wide = wide")
    m = build_models(src, path, SETTINGS)[0]
    assert not any("traces" in a for a in m.assumptions), m.assumptions
    assert any("fill_oob" in u.construct for u in m.unmodeled), m.unmodeled



# cuDNN frost's `_ir_elem_ty(dtype)`: returns for each dtype it knows, raises after. The dtype is
# not known here, so each `if` is a choice; but a `return` is decided when the kernel is traced.
# The side that goes on writes a buffer warp 1 reads without a barrier: taken, it would race.
ELEM_TYPE_HELPER = """

@cute.jit
def elem_bits(dtype, buf):
    if dtype is cutlass.Float32:
        return 32
    else:
        buf[0] = 1.0
    raise TypeError("unsupported dtype")
"""


def test_a_path_that_raises_after_trace_time_returns_is_dropped(require_spin):
    body = """\
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
if warp_idx == 0:
    bits = elem_bits(mA.element_type, sBuf)
if warp_idx == 1:
    mA[0] = sBuf[0]
"""
    src = kernel_source(async_pipeline() + body).replace("\n\nclass K:", ELEM_TYPE_HELPER + "\n\nclass K:", 1)
    m = build_models(src, "k.py", SETTINGS)[0]
    assert not m.unmodeled, [(u.construct, u.why) for u in m.unmodeled]
    raise_line = line_of(src, "raise TypeError")
    assert any(f"line {raise_line} raises while the kernel is traced after the `return`" in a
               for a in m.assumptions), m.assumptions
    (choice,) = [op for op in ir.walk(m.processes[0].variants[-1]) if isinstance(op, ir.Choice)]
    assert choice.dead == (1,)  # the `else` side, which writes and then raises
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_a_dropped_path_that_would_hang_is_never_taken(require_spin):
    # The side that raises waits on a barrier nobody arrives at: taken, it would hang.
    helper = ELEM_TYPE_HELPER.replace("buf[0] = 1.0", "cute.arch.mbarrier_wait(buf, 0)")
    body = """\
hang = smem.allocate_array(cutlass.Int64, num_elems=1)
if warp_idx == 0:
    cute.arch.mbarrier_init(hang, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    bits = elem_bits(mA.element_type, hang)
"""
    src = kernel_source(async_pipeline() + body).replace("\n\nclass K:", helper + "\n\nclass K:", 1)
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])


# cuDNN's sm80 prefill: `load_b_smem_x4(N=tile_n)` raises unless `N // 8` fragments are even, and
# the kernel loops over those fragments, so a compile-time condition takes the loop bound's
# modeled trip count (1 to 3), and odd counts are builds the kernel's own check rejects.
EVEN_FRAGMENTS = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
n_frags = self.n // 8
if cutlass.const_expr(n_frags % 2 != 0):
    raise ValueError("fragments must pair up")
if warp_idx == 0:
    for f in cutlass.range_constexpr(n_frags):
        sBuf[lane] = 1.0
cute.arch.sync_threads()
if warp_idx == 1:
    mA[lane] = sBuf[lane]
"""


def test_trip_counts_a_compile_time_check_on_the_loop_bound_rejects_are_left_out(require_spin):
    src = kernel_source(EVEN_FRAGMENTS, init="self.n = mystery()")
    m = build_models(src, "k.py", SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    assert {c.trips.get("n_frags") for c in m.configs} == {2}
    # The discovery run takes one trip per loop: an odd count, so it is repeated with the counts
    # from the bound down, and 2 traces.
    assert any("takes 1 trip (a compile-time check on it): the loops were found with 2" in a for a in m.assumptions)
    assert any("not checked" in a and "raises" in a for a in m.assumptions), m.assumptions
    kr = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels[0]
    assert kr.verdict == "verified", kr.reason
    racy = api.check_source(src.replace("        cute.arch.sync_threads()\n", ""), "k.py", SETTINGS,
                            with_fixes=False).kernels[0]
    assert racy.verdict == "counterexample" and [f.code for f in racy.findings] == ["CS201"], racy.reason


def test_the_rerun_for_a_tensor_the_kernel_writes_keeps_the_trip_counts_that_trace():
    # The kernel reads mA's first element into a condition and writes mA: the discovery run is
    # repeated once that is known, at the trip counts the first one found to trace.
    body = EVEN_FRAGMENTS.replace("if warp_idx == 0:\n", "if warp_idx == 0 and mA[0] > 0:\n", 1)
    m = build_models(kernel_source(body, init="self.n = mystery()"), "k.py", SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    assert {c.trips.get("n_frags") for c in m.configs} == {2}


def test_a_check_that_fails_at_every_trip_count_is_still_unmodeled():
    src = kernel_source(EVEN_FRAGMENTS.replace("n_frags % 2 != 0", "n_frags > 0"), init="self.n = mystery()")
    m = build_models(src, "k.py", SETTINGS)[0]
    assert [u.construct for u in m.unmodeled] == ["kernel body"]
    assert "raises while the kernel is traced" in m.unmodeled[0].why
