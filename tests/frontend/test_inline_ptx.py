"""Inline PTX (`cute.arch.inline_ptx`, `cutlass.experimental.primitives.inline_ptx`).

The PTX text is classified instruction by instruction: register-only instructions are nothing
the model tracks, plain global/shared loads and stores access the buffer their address operand
names, red/atom are atomics, griddepcontrol is programmatic dependent launch; everything else is
unmodeled with its mnemonic named.
"""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source

PTX_IMPORT = "from cutlass.cute.arch.nvvm_wrappers import inline_ptx\n"


def build(body: str):
    src = kernel_source(body).replace("import cutlass\n", "import cutlass\n" + PTX_IMPORT, 1)
    return build_models(src, "k.py", Settings())[0]


def ops(m, warp=0):
    return list(ir.walk(next(p for p in m.processes if p.warp == warp).variants[0]))


def test_register_only_ptx_and_f_string_templates_are_modeled_as_nothing():
    m = build("""\
tag = "bf16"
x = inline_ptx(f"cvt.rn.{tag}x2.f32 $0, $2, $1;\\nmov.b32 $0, $0;", write_only_types=[cutlass.Int32],
               read_only_args=[1.0, 2.0])
a, b = inline_ptx("{ .reg .b16 lo, hi;\\n mov.b32 {lo, hi}, $2;\\n prmt.b32 $0, $2, $2, 0x1234;\\n mov.b32 $1, lo; }",
                  write_only_types=[cutlass.Int32, cutlass.Int32], read_only_args=[x])
cute.arch.sync_threads()
""")
    assert not m.unmodeled, m.unmodeled
    assert not any(isinstance(o, ir.Access) for o in ops(m))


def test_global_and_shared_loads_and_stores_access_the_addressed_buffer():
    m = build("""\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
inline_ptx("st.shared.f32 [$0], $1;", read_only_args=[sBuf.iterator, 1.0])
v = inline_ptx("ld.global.u16 $0, [$1];", write_only_types=[cutlass.Int16], read_only_args=[mA.iterator])
""")
    assert not m.unmodeled, m.unmodeled
    acc = [(o.region.space, o.write) for o in ops(m) if isinstance(o, ir.Access)]
    assert ("smem", True) in acc and ("gmem", False) in acc


def test_red_global_add_is_a_data_atomic():
    m = build("""\
inline_ptx("red.global.add.f32 [$0], $1;", read_only_args=[mA.iterator, 1.0])
""")
    assert not m.unmodeled, m.unmodeled
    assert any("relaxed GMEM atomics" in a for a in m.assumptions), m.assumptions


def test_synchronizing_ptx_is_unmodeled_with_its_mnemonic():
    m = build("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
inline_ptx("mbarrier.inval.shared::cta.b64 [$0];", read_only_args=[bars])
inline_ptx(PTX_FROM_ELSEWHERE, read_only_args=[bars])
inline_ptx(f"{op}.global.f32 [$0], $1;", read_only_args=[mA.iterator, 1.0])
inline_ptx("trap;")
""")
    whys = sorted(u.why for u in m.unmodeled)
    assert whys == sorted([
        "`mbarrier.inval.shared::cta.b64` not modeled",
        "the PTX text does not fold",
        "an instruction whose mnemonic does not fold (`\x00.global.f32 [$0], $1`)",
        "`trap` at line 23 aborts the launch on every path: the kernel always aborts, nothing else runs to check",
    ]), whys


def test_griddepcontrol_is_programmatic_dependent_launch():
    m = build('inline_ptx("griddepcontrol.wait;")\n')
    assert not m.unmodeled, m.unmodeled
    assert any(a.startswith("programmatic dependent launch") for a in m.assumptions)


def test_ptx_text_built_in_python_folds():
    # frost's style: operand lists joined from a generator, `%`-formatted, concatenated, kept
    # in a variable, and an implicit concatenation of literals.
    m = build("""\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
num = 4
regs = ", ".join("$%d" % i for i in range(num))
zero = ("mov.b32 {" + regs + "}, 0;")
inline_ptx(zero, write_only_types=[cutlass.Int32] * num)
space = "shared"
store = ("st.%s.f32 " "[$0], $1;") % space
inline_ptx(store, read_only_args=[sBuf.iterator, 1.0])
""")
    assert not m.unmodeled, m.unmodeled
    assert [(o.region.space, o.write) for o in ops(m) if isinstance(o, ir.Access)] == [("smem", True)]


def test_ptx_text_with_a_runtime_part_names_the_instruction():
    # The element count does not fold: the mnemonic's head still does, so the report names it
    # (not "the PTX text does not fold").
    m = build("""\
n = mA.shape[0]
_ptx = ("tcgen05.st.sync.aligned.32x32b.x%d.b32 [$0], {$1};") % (n,)
inline_ptx(_ptx, read_only_args=[1, 2])
""")
    whys = [u.why for u in m.unmodeled]
    assert any(w.startswith("`tcgen05.st.sync.aligned.32x32b.x{…}.b32` not modeled") for w in whys), whys


# One mbarrier of 32 arrivals, initialised and fenced before any warp uses it.
INIT_BAR = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    cute.arch.mbarrier_init(bar, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
"""


def _sync_ops(m, warp=0):
    kinds = (ir.MbArrive, ir.MbWait, ir.NamedBarrier, ir.Fence)
    return [o for o in ops(m, warp) if isinstance(o, kinds)]


def test_mbarrier_and_barrier_instructions_are_the_operations_they_spell():
    # frost's style: named operands `{$r0}`, a try_wait loop in the snippet, and f-string ids.
    m = build(INIT_BAR + """\
if warp_idx == 0:
    inline_ptx("fence.proxy.async.shared::cta;")
    inline_ptx("mbarrier.arrive.release.cta.shared::cta.b64 _, [{$r0}];", read_only_args=[bar])
if warp_idx == 1:
    inline_ptx(
        "{\\n .reg .pred P1;\\n LAB_WAIT:\\n"
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 P1, [{$r0}], {$r1};\\n"
        "@P1 bra DONE;\\n bra LAB_WAIT;\\n DONE:\\n }",
        read_only_args=[bar, 0])
barrier_id, thread_count = 1, 64
inline_ptx(f"bar.sync {barrier_id}, {thread_count};")
""")
    assert not m.unmodeled, m.unmodeled
    w0 = [type(o).__name__ for o in _sync_ops(m, 0)]
    w1 = [type(o).__name__ for o in _sync_ops(m, 1)]
    assert w0[-3:] == ["Fence", "MbArrive", "NamedBarrier"], w0
    assert w1[-2:] == ["MbWait", "NamedBarrier"], w1
    nb = [o for o in ops(m, 1) if isinstance(o, ir.NamedBarrier)][-1]
    assert (nb.barrier_id, nb.threads, nb.wait) == (1, 64, True)


def test_the_cta_scoped_barrier_spelling_is_the_named_barrier():
    # cuDNN's SM120 block-sparse FP8 kernel: `barrier.cta.sync 1, 64;` / `barrier.cta.arrive 2, 64;`.
    m = build("""\
inline_ptx("barrier.cta.arrive 2, 64;")
inline_ptx("barrier.cta.sync.aligned 1, 64;")
""")
    assert not m.unmodeled, m.unmodeled
    nbs = [(o.barrier_id, o.threads, o.wait) for o in ops(m, 0) if isinstance(o, ir.NamedBarrier)]
    assert nbs == [(2, 64, False), (1, 64, True)], nbs


def test_a_try_wait_returned_to_python_is_a_try_wait_result():
    # No loop in the snippet: the result is the predicate, polled by the Python loop.
    m = build(INIT_BAR + """\
if warp_idx == 0:
    cute.arch.mbarrier_arrive(bar)
if warp_idx == 1:
    done = inline_ptx("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }",
                      write_only_types=[cutlass.Int32], read_only_args=[bar, 0])
    while not done:
        done = inline_ptx("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }",
                          write_only_types=[cutlass.Int32], read_only_args=[bar, 0])
""")
    assert not m.unmodeled, m.unmodeled
    assert any(isinstance(o, ir.MbWait) for o in ops(m, 1))


def test_a_fence_whose_semantics_are_not_modeled_stays_unmodeled():
    m = build("""\
inline_ptx("fence.release.sync_restrict::shared::cta.cluster;")
""")
    assert [u.why for u in m.unmodeled] == ["`fence.release.sync_restrict::shared::cta.cluster` not modeled"]


HANDOFF = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp_idx == 0:
    cute.arch.mbarrier_init(bar, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    sBuf[lane] = 1.0
    ARRIVE
if warp_idx == 1:
    inline_ptx("{ .reg .pred P1; W: mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1; @!P1 bra W; }",
               read_only_args=[bar, 0])
    mA[lane] = sBuf[lane]
"""


def _verdict(arrive: str):
    from cutespin import api
    src = kernel_source(HANDOFF.replace("ARRIVE", arrive)).replace("import cutlass\n", "import cutlass\n" + PTX_IMPORT, 1)
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    return kr.verdict, [f.code for f in kr.findings]


def test_an_inline_ptx_handoff_verifies_and_a_missing_arrive_deadlocks(require_spin):
    assert _verdict('inline_ptx("mbarrier.arrive.shared::cta.b64 _, [$0];", read_only_args=[bar])')[0] == "verified"
    assert _verdict("pass") == ("counterexample", ["CS101"])


def test_a_synchronizing_instruction_under_a_predicate_is_unmodeled():
    # Whether `@p` arrives depends on a predicate the model does not see: never taken as always.
    m = build(INIT_BAR + """\
inline_ptx("{ .reg .pred p; setp.ne.u32 p, $1, 0; @p mbarrier.arrive.shared::cta.b64 _, [$0]; }",
           read_only_args=[bar, warp_idx])
""")
    assert [u.why for u in m.unmodeled] == ["`mbarrier.arrive.shared::cta.b64` under a predicate"]
    assert not any(isinstance(o, ir.MbArrive) for o in ops(m, 0))


def test_branches_outside_a_wait_loop_are_unmodeled():
    m = build(INIT_BAR + """\
inline_ptx("{ .reg .pred p; setp.ne.u32 p, $1, 0; @p bra SKIP; mbarrier.arrive.shared::cta.b64 _, [$0]; SKIP: }",
           read_only_args=[bar, warp_idx])
""")
    assert "`bra` under a predicate" in [u.why for u in m.unmodeled]


def test_branches_among_register_only_instructions_are_nothing():
    # cuDNN's QAT fake-quant: a warp-uniform shortcut jumps over shuffles and conversions. Either
    # path only computes registers.
    m = build("""\
q = inline_ptx("{ .reg .pred small, all_small; .reg .f32 t, s;\\n"
               "setp.le.f32 small, $1, 0f3c400000; vote.sync.all.pred all_small, small, -1;\\n"
               "@all_small bra MIN_SCALE; shfl.sync.bfly.b32 t, $1, 8, 31, -1; max.f32 s, $1, t; bra CONVERT;\\n"
               "MIN_SCALE: mov.f32 s, 0f3b000000;\\n"
               "CONVERT: mul.f32 $0, s, $1; }", write_only_types=[cutlass.Float32], read_only_args=[1.0])
cute.arch.sync_threads()
""")
    assert not m.unmodeled, m.unmodeled
    assert not any(isinstance(o, ir.Access) for o in ops(m))


def test_tcgen05_ld_is_an_asynchronous_tmem_read_that_wait_ld_retires():
    # cuDNN frost's style: a fused load + row max (`tcgen05.ld.red`) whose operand list is joined
    # in Python, retired by an inline `tcgen05.wait::ld`. The address is the retrieved TMEM
    # pointer (that buffer) or a register computed from it at run time (the whole allocation, inexact).
    m = build("""\
smem = cutlass.utils.SmemAllocator()
holder = smem.allocate_array(cutlass.Int32, 1)
if cute.arch.warp_idx() == 0:
    cute.arch.alloc_tmem(256, holder)
cute.arch.sync_threads()
tmem = cute.arch.retrieve_tmem_ptr(cutlass.Float32, alignment=16, ptr_to_buffer_holding_addr=holder)
num = 4
data = ", ".join("{$w%d}" % i for i in range(num))
ld_max = ("tcgen05.ld.red.sync.aligned.32x32b.x%d.f32.max " "{" + data + "}, {$w%d}, [{$r0}];") % (num, num)
outs = inline_ptx(ld_max, write_only_types=[cutlass.Int32] * (num + 1), read_only_args=[tmem])
column_addr = inline_ptx("add.u32 $0, $1, $2;", write_only_types=[cutlass.Int32], read_only_args=[tmem, outs[0]])
outs = inline_ptx(ld_max, write_only_types=[cutlass.Int32] * (num + 1), read_only_args=[column_addr])
inline_ptx("tcgen05.wait::ld.sync.aligned;")
""")
    assert not m.unmodeled, m.unmodeled
    o = ops(m)
    reads = [x for x in o if isinstance(x, ir.AsyncRead)]
    wait = next(x for x in o if isinstance(x, ir.AsyncReadWait))
    assert [(r.kind, r.region.space) for r in reads] == [("tmem_ld", "tmem")] * 2
    assert wait.kind == "tmem_ld" and wait.done_reads == reads
    assert any(a.startswith("TMEM: an inline-PTX tcgen05.ld") for a in m.assumptions), m.assumptions


def test_other_tcgen05_instructions_stay_unmodeled():
    m = build('inline_ptx("tcgen05.st.sync.aligned.32x32b.x1.b32 [$0], {$1};", read_only_args=[0, 1])\n')
    assert [u.why for u in m.unmodeled] == ["`tcgen05.st.sync.aligned.32x32b.x1.b32` not modeled"]


def test_a_predicate_keyword_guards_the_snippet_like_an_if():
    # cuDNN frost's predicated credit: `inline_ptx(..., predicate=lane == 0)` arrives only in the
    # lanes where the predicate holds (taking it as run by every lane would miscount the
    # arrivals); a predicate the model does not fold is a runtime choice, never taken as always.
    m = build(INIT_BAR + """\
lane = cute.arch.lane_idx()
inline_ptx("mbarrier.arrive.release.cta.shared::cta.b64 _, [{$r0}];", read_only_args=[bar], predicate=lane == 0)
inline_ptx("mbarrier.arrive.release.cta.shared::cta.b64 _, [{$r0}];", read_only_args=[bar], predicate=True)
inline_ptx("mbarrier.arrive.release.cta.shared::cta.b64 _, [{$r0}];", read_only_args=[bar], predicate=False)
inline_ptx("mbarrier.arrive.release.cta.shared::cta.b64 _, [{$r0}];", read_only_args=[bar],
           predicate=mA.shape[0] > 8)
""")
    assert not m.unmodeled, m.unmodeled
    top = next(p for p in m.processes if p.warp == 0).variants[0]
    arrives = [o for o in top if isinstance(o, ir.MbArrive)]
    assert [a.count for a in arrives] == [1, 32]  # arrivals: one lane, then every lane
    choice = next(o for o in top if isinstance(o, ir.Choice))
    assert [[type(o).__name__ for o in alt] for alt in choice.alternatives] == [["MbArrive"], []]

def test_a_predicate_some_of_whose_lane_values_are_not_known_is_a_runtime_choice():
    # A per-lane predicate combining the lane with a value the model does not fold: the lanes
    # below 4 have an unknown value, which has no truth value; it is a runtime choice, as a whole
    # unknown predicate is (cuDNN's d512 SDPA backward crashed the front end here).
    m = build(INIT_BAR + """\
lane = cute.arch.lane_idx()
inline_ptx("mbarrier.arrive.release.cta.shared::cta.b64 _, [{$r0}];", read_only_args=[bar],
           predicate=(lane < 4) & (mA.shape[0] > 8))
""")
    assert not m.unmodeled, m.unmodeled
    top = next(p for p in m.processes if p.warp == 0).variants[0]
    choice = next(o for o in top if isinstance(o, ir.Choice))
    assert [[type(o).__name__ for o in alt] for alt in choice.alternatives] == [["MbArrive"], []]


LLVM_IMPORT = "from cutlass._mlir.dialects import llvm\nfrom cutlass.cutlass_dsl import T\n"


def build_llvm(body: str):
    src = kernel_source(body).replace("import cutlass\n", "import cutlass\n" + LLVM_IMPORT, 1)
    return build_models(src, "k.py", Settings())[0]


def test_llvm_inline_asm_is_read_as_ptx_outputs_first():
    # The MLIR LLVM dialect's inline assembly (cuDNN's helpers): `=r` outputs are numbered
    # before `operands_`, so `[$1]` is the first operand; math is nothing, a barrier is a barrier.
    m = build_llvm("""\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Int32, cute.make_layout(64))
x = llvm.inline_asm(T.i32(), [llvm.ptrtoint(T.i32(), sBuf.iterator.llvm_ptr)], "ld.shared.b32 $0, [$1];", "=r,r",
                    has_side_effects=True)
y = llvm.inline_asm(T.i32(), [x], "cvt.rn.f16x2.f32 $0, $1, $1;", "=r,r")
llvm.inline_asm(None, [], "bar.sync 1, 64;", "", has_side_effects=True)
""")
    assert not m.unmodeled, m.unmodeled
    kinds = [(type(o).__name__, getattr(o, "write", None)) for o in ops(m) if isinstance(o, (ir.Access, ir.NamedBarrier))]
    assert kinds == [("Access", False), ("NamedBarrier", None)], kinds


def test_llvm_inline_asm_whose_text_does_not_fold_is_unmodeled_not_skipped():
    m = build_llvm("""\
llvm.inline_asm(None, [], ASM_FROM_ELSEWHERE, "", has_side_effects=True)
llvm.inline_asm(None, [], "tcgen05.st.sync.aligned.32x32b.x8.b32 [$0], {$1};", "r,r", has_side_effects=True)
""")
    assert sorted(u.why for u in m.unmodeled) == [
        "`tcgen05.st.sync.aligned.32x32b.x8.b32` not modeled",
        "the assembly text, operands or constraints do not fold"], m.unmodeled


def test_cache_hints_memory_bars_and_tcgen05_thread_sync_fences():
    m = build("""\
inline_ptx("prefetch.global.L2 [$0];", read_only_args=[mA.iterator])
inline_ptx("membar.gl;")
inline_ptx("tcgen05.fence::after_thread_sync;")
""")
    assert not m.unmodeled, m.unmodeled
    fences = [(o.kind, o.scope) for o in ops(m) if isinstance(o, ir.Fence)]
    assert fences == [("acq_rel", "gpu")], fences
    assert any(a.startswith("TMEM: tcgen05.fence::") for a in m.assumptions), m.assumptions


def test_exit_in_ptx_ends_the_thread():
    m = build("""\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    inline_ptx("exit;")
cute.arch.sync_threads()
""")
    assert not m.unmodeled, m.unmodeled
    def barriers(warp):
        return [o for p in m.processes if p.warp == warp for o in ir.walk(p.variants[0])
                if isinstance(o, ir.NamedBarrier)]
    assert not barriers(0) and barriers(1)


def test_global_stores_to_an_unresolved_address_are_plain_data_without_gmem_flags():
    # frost's `st_global_v4(row_ptr.toint(Int64) + offset, ...)`: an integer address.
    m = build("""\
addr = mystery_address()
inline_ptx("st.global.v4.f32 [$0], {$1, $2, $3, $4};", read_only_args=[addr, 1.0, 2.0, 3.0, 4.0])
inline_ptx("st.global.L1::no_allocate.v2.f32 [$0], {$1, $2};", read_only_args=[mA.iterator, 1.0, 2.0])
""")
    assert not m.unmodeled, m.unmodeled
    assert any("addresses that did not resolve (line" in a for a in m.assumptions), m.assumptions
    # The store with a cache hint names its tensor.
    assert [(o.region.space, o.write) for o in ops(m) if isinstance(o, ir.Access)] == [("gmem", True)]


def test_global_stores_to_an_unresolved_address_are_unmodeled_next_to_gmem_flags():
    m = build("""\
addr = mystery_address()
inline_ptx("st.global.v4.f32 [$0], {$1, $2, $3, $4};", read_only_args=[addr, 1.0, 2.0, 3.0, 4.0])
cute.arch.red(mA.iterator, cutlass.Int32(1), op="add", dtype="s32", sem="release", scope="gpu")
""")
    assert [u.construct for u in m.unmodeled] == ["st.global"]
    assert "synchronizes through GMEM flags" in m.unmodeled[0].why


def test_bulk_stores_and_reductions_from_shared_memory_are_tma_stores():
    # flash-attn's `cpasync_reduce_bulk_add_f32`: dQ accumulated into global memory in bulk.
    m = build("""\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
inline_ptx("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], $2;",
           read_only_args=[mA.iterator, sBuf.iterator.toint(), 256])
inline_ptx("cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;",
           read_only_args=[mA.iterator, sBuf.iterator, 256])
inline_ptx("cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;",
           read_only_args=[mA.iterator, mystery(), 256])
""")
    stores = [o for o in ops(m) if isinstance(o, ir.TmaStore)]
    assert [(s.region.name, s.dest.name if s.dest else None) for s in stores] == \
        [("sBuf (CTA 0)", "global mA")] * 2
    assert [u.why for u in m.unmodeled] == [
        "`cp.async.bulk.global.shared::cta.bulk_group` whose shared-memory source could not be resolved"]


BULK_LOAD = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp_idx == 0:
    cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar, EXPECT)
        inline_ptx("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
                   read_only_args=[sBuf.iterator.toint(), mA.iterator, 128, bar.toint()])
if warp_idx == 1:
    cute.arch.mbarrier_wait(bar, 0)
    mA[lane] = sBuf[lane]
"""


def _bulk_load(expect: int):
    from cutespin import api
    src = kernel_source(BULK_LOAD.replace("EXPECT", str(expect))).replace(
        "import cutlass\n", "import cutlass\n" + PTX_IMPORT, 1)
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def test_a_bulk_copy_into_shared_memory_completes_its_bytes_on_the_mbarrier(require_spin):
    # cuDNN's MegaMoE requantization loads its scale rows with a plain (non-tensor) bulk copy.
    kr = _bulk_load(128)
    assert kr.verdict == "verified" and not kr.unmodeled, (kr.verdict, kr.reason, kr.unmodeled)
    # Expecting more bytes than the copy brings: the phase never completes.
    short = _bulk_load(256)
    assert short.verdict == "counterexample" and [f.code for f in short.findings] == ["CS101"], short.reason


def test_a_bulk_copy_whose_byte_count_does_not_fold_by_every_lane_is_unmodeled():
    # One lane's copy of unknown size counts as one copy against its expect (the primitives'
    # tests); a warp's copies would stand for as many units, which the model cannot tell.
    m = build(INIT_BAR + """\
inline_ptx("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
           read_only_args=[bar, mA.iterator, mystery(), bar])
""")
    assert [u.why for u in m.unmodeled] == [
        "`cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes` whose byte count does not fold, issued by "
        "several lanes"]


def test_red_with_ordering_qualifiers_is_a_flag_release_at_its_scope():
    # flash-attn's `red_release`: `red.release.gpu.global.add.s32` (the qualifiers before the
    # state space) releases at gpu scope; a relaxed `atom` with its scope is a plain update.
    src = kernel_source("""\
flag = mFlag.iterator
bidx, _, _ = cute.arch.block_idx()
if bidx == 0:
    inline_ptx("red.release.gpu.global.add.s32 [$0], $1;", read_only_args=[flag, 1])
else:
    while cute.arch.load(flag, cutlass.Int32, sem="acquire", scope="gpu") < 1:
        pass
""", pins="grid=2").replace("import cutlass\n", "import cutlass\n" + PTX_IMPORT, 1).replace(
        "def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, mFlag: cute.Tensor):")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled, m.unmodeled
    up = next(x for x in ir.walk(next(p for p in m.processes if p.cta == 0).variants[0])
              if isinstance(x, ir.FlagUpdate))
    assert (up.release_scope, up.value) == ("gpu", 1)
    relaxed = build_models(src.replace("red.release.gpu.global.add.s32", "red.relaxed.cta.global.add.s32"),
                           "k.py", Settings())[0]
    up = next(x for x in ir.walk(next(p for p in relaxed.processes if p.cta == 0).variants[0])
              if isinstance(x, ir.FlagUpdate))
    assert up.release_scope is None


CHOSEN_CVT = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
cvt = ""
if cutlass.const_expr(self.e8m0):
    cvt = "cvt.rp.satfinite.ue8m0x2.f32"
else:
    cvt = OTHER
x = inline_ptx("{\\n" "  .reg .b16 bf_lo;\\n" f"  {cvt} bf_lo, 0f00000000, $1;\\n" "  mov.b32 $0, 0;\\n" "}",
               write_only_types=[cutlass.Int32], read_only_args=[1.0, bars])
"""


def test_a_mnemonic_chosen_at_compile_time_among_register_only_ones_is_modeled_as_nothing():
    # cuDNN's MoE GEMM helpers: the cvt mnemonic is a string chosen by `const_expr` on the fp8
    # type, which does not fold here. Every text the snippet may be only converts registers.
    m = build(CHOSEN_CVT.replace("OTHER", '"cvt.rn.satfinite.e4m3x2.f32"'))
    assert not m.unmodeled, m.unmodeled
    # One of the texts it may be names a barrier: what it does is not known.
    m = build(CHOSEN_CVT.replace("OTHER", '"mbarrier.arrive.shared::cta.b64 _, [$2]; cvt.rn.satfinite.e4m3x2.f32"'))
    assert [u.why for u in m.unmodeled] == ["an instruction whose mnemonic does not fold (`\x00 bf_lo, 0f00000000, $1`)"], \
        m.unmodeled


MMA_PTX = """\
smem = cutlass.utils.SmemAllocator()
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 16, 2)), byte_alignment=128)
sB = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 16, 2)), byte_alignment=128)
a_lo = cutlass.Int32(0x00100010 | ((sA[None, None, 1].iterator.toint() & 0x3FFFF) >> 4))
b_lo = cutlass.Int32(0x00100010 | ((B_ADDRESS & 0x3FFFF) >> 4))
llvm.inline_asm(None, [cute.arch.make_warp_uniform(a_lo).ir_value(), b_lo.ir_value(), cutlass.Int32(0).ir_value()],
                "{ .reg .pred leader; .reg .b32 acc, a_lo; .reg .b64 da, db;\\n"
                "elect.sync _|leader, -1;\\n mov.b32 acc, $2;\\n mov.b32 a_lo, $0;\\n"
                "mov.b64 da, {a_lo, 0x40004000};\\n mov.b64 db, {$1, 0x40004000};\\n"
                "@leader tcgen05.mma.cta_group::1.kind::f16 [acc], da, db, 0x08200490, 1;\\n"
                "add.u32 a_lo, a_lo, 0x2;\\n mov.b64 da, {a_lo, 0x40004000};\\n"
                "@leader tcgen05.mma.cta_group::1.kind::f16 [acc], da, db, 0x08200490, 1; }",
                "r,r,r", has_side_effects=True)
"""


def test_an_elected_tcgen05_mma_on_descriptors_reads_the_buffers_they_were_computed_from():
    # The `gemm_ptx` helpers' form: descriptor start fields from the operands' addresses, carried
    # through registers (`mov`, `add` of a K-block step), one MMA per K block by the elected lane.
    m = build_llvm(MMA_PTX.replace("B_ADDRESS", "sB[None, None, 0].iterator.toint()"))
    assert not m.unmodeled, m.unmodeled
    o = ops(m)
    reads = [(x.kind, x.region.name, x.lanes) for x in o if isinstance(x, ir.AsyncRead)]
    assert reads == [("umma", "sA[stage 1] (CTA 0)", 1), ("umma", "sB[stage 0] (CTA 0)", 1)] * 2
    # The accumulator address is a plain number here: the whole allocation, stated.
    writes = [(x.region.space, x.exact) for x in o if isinstance(x, ir.Access) and x.write]
    assert writes == [("tmem", False)] * 2
    assert any(a.startswith("TMEM: an inline-PTX tcgen05.mma") for a in m.assumptions), m.assumptions


def test_a_tcgen05_mma_whose_descriptor_is_no_buffer_address_is_unmodeled():
    m = build_llvm(MMA_PTX.replace("B_ADDRESS", "mA.shape[0]"))
    assert {u.why for u in m.unmodeled} == {"`tcgen05.mma` whose shared-memory descriptor could not be resolved to "
                                            "a buffer"}


def test_a_tcgen05_mma_under_another_predicate_stays_unmodeled():
    m = build_llvm(MMA_PTX.replace("B_ADDRESS", "sB[None, None, 0].iterator.toint()")
                   .replace("elect.sync _|leader, -1;", "setp.ne.b32 leader, $2, 0;"))
    assert {u.why for u in m.unmodeled} == {"`tcgen05.mma.cta_group::1.kind::f16` under a predicate"}


def test_the_a_operand_source_of_a_trivial_tiled_mma_folds():
    # The helpers pick the instruction form with `op.a_src == OperandSource.TMEM`;
    # `make_trivial_tiled_mma` takes A from shared memory unless told otherwise.
    src = """\
mma = utils.blackwell_helpers.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, tcgen05.OperandMajorMode.K,
                                                     tcgen05.OperandMajorMode.K, cutlass.Float32,
                                                     tcgen05.CtaGroup.ONE, (128, 128){extra})
smem = cutlass.utils.SmemAllocator()
flag = smem.allocate_tensor(cutlass.Int32, cute.make_layout(4))
if cutlass.const_expr(mma.op.a_src == tcgen05.OperandSource.TMEM):
    flag[0] = 1
else:
    flag[1] = 1
cute.arch.sync_threads()
"""
    head = "import cutlass.utils as utils\nfrom cutlass.cute.nvgpu import tcgen05\n"

    def written(extra):
        text = kernel_source(src.format(extra=extra)).replace("import cutlass\n", "import cutlass\n" + head, 1)
        m = build_models(text, "k.py", Settings())[0]
        return {x.region.name for x in ops(m) if isinstance(x, ir.Access) and x.write}

    assert written("") == {"flag[1] (CTA 0)"}
    assert written(", a_source=tcgen05.OperandSource.TMEM") == {"flag[0] (CTA 0)"}


def test_a_register_rewritten_after_a_move_no_longer_names_the_buffer():
    # `mov` keeps a buffer's address in the register; the `add` of an unknown offset after it
    # changes what it holds, so the store through it is not taken to hit the buffer's start.
    m = build_llvm("""\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Int32, cute.make_layout(64))
llvm.inline_asm(None, [sBuf.iterator.llvm_ptr, mA.shape[0], cutlass.Int32(1).ir_value()],
                "{ .reg .b32 r;\\n mov.b32 r, $0;\\n add.u32 r, r, $1;\\n st.shared.b32 [r], $2; }", "r,r,r",
                has_side_effects=True)
cute.arch.sync_threads()
""")
    assert not [x for x in ops(m) if isinstance(x, ir.Access) and x.write]
    assert [u.why for u in m.unmodeled] == ["`st.shared.b32` not modeled"]


def test_a_two_cta_inline_mma_stays_unmodeled_and_tmem_scale_operands_are_read():
    two_cta = build_llvm(MMA_PTX.replace("B_ADDRESS", "sB[None, None, 0].iterator.toint()")
                         .replace("cta_group::1", "cta_group::2"))
    assert {u.why for u in two_cta.unmodeled} == {"`tcgen05.mma.cta_group::2.kind::f16` not modeled"}
    scaled = build_llvm(MMA_PTX.replace("B_ADDRESS", "sB[None, None, 0].iterator.toint()")
                        .replace("kind::f16 [acc], da, db, 0x08200490, 1",
                                 "kind::mxf8f6f4.block_scale [acc], da, db, 0x08200490, [acc], [acc], 1"))
    assert not scaled.unmodeled, scaled.unmodeled
    tmem_reads = [x for x in ops(scaled) if isinstance(x, ir.Access) and not x.write and x.region.space == "tmem"]
    assert len(tmem_reads) == 4  # two scale-factor operands for each of the two MMAs
