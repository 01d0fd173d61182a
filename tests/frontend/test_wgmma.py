"""Warpgroup MMA (wgmma) operand reads: asynchronous until warpgroup.wait_group retires them."""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

HEAD = '''
import cutlass
import cutlass.cute as cute


class K:
    # cutespin: stages=2
    @cute.kernel
    def kernel(self, mC: cute.Tensor, flag: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 16, 2)), 128)
        mma = cute.make_tiled_mma(cute.nvgpu.warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64, 16)))
        thr = mma.get_slice(tidx)
        tCrA = mma.make_fragment_A(thr.partition_A(sA))
        acc = cute.make_fragment(thr.partition_shape_C((64, 64)), cutlass.Float32)
'''


def _ops(body: str):
    src = HEAD + "".join("        " + line + "\n" for line in body.strip().splitlines())
    k = build_models(src, "k.py", Settings())[0]
    return k, (list(ir.walk(k.processes[0].variants[-1])) if k.processes else [])


def test_wgmma_reads_are_retired_by_wait_group():
    k, ops = _ops("""
cute.nvgpu.warpgroup.fence()
cute.gemm(mma, acc, tCrA[(None, None, 0, 0)], tCrA[(None, None, 0, 0)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.gemm(mma, acc, tCrA[(None, None, 0, 1)], tCrA[(None, None, 0, 1)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(1)
cute.nvgpu.warpgroup.wait_group(0)
""")
    reads = [op for op in ops if isinstance(op, ir.AsyncRead)]
    waits = [op for op in ops if isinstance(op, ir.AsyncReadWait)]
    assert {r.kind for r in reads} == {"wgmma"}
    assert [r.region.name for r in reads] == ["sA[stage 0] (CTA 0)"] * 2 + ["sA[stage 1] (CTA 0)"] * 2
    assert waits[0].done_reads == reads[:2]
    assert waits[1].done_reads == reads[2:]
    assert not [op for op in ops if isinstance(op, ir.Access) and op.region.name.startswith("sA")]
    assert not k.unmodeled


def test_uncommitted_wgmma_is_not_retired_and_a_stage_read_again_stays_in_flight():
    _, ops = _ops("""
cute.gemm(mma, acc, tCrA[(None, None, 0, 0)], tCrA[(None, None, 0, 0)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.gemm(mma, acc, tCrA[(None, None, 0, 0)], tCrA[(None, None, 0, 0)], acc)
cute.nvgpu.warpgroup.wait_group(0)
""")
    wait = next(op for op in ops if isinstance(op, ir.AsyncReadWait))
    # The first group is retired, but the uncommitted MMA still reads the same stage.
    assert wait.done_reads == []


def test_mma_without_warpgroup_groups_reads_at_issue():
    """A tcgen05 MMA (no warpgroup commit/wait in the warp) reads its operands at issue: its
    completion is signalled through tcgen05.commit."""
    _, ops = _ops("""
cute.gemm(mma, acc, tCrA[(None, None, 0, 0)], tCrA[(None, None, 0, 0)], acc)
""")
    assert not [op for op in ops if isinstance(op, ir.AsyncRead)]
    assert {op.region.name for op in ops if isinstance(op, ir.Access)} == {"sA[stage 0] (CTA 0)"}


def test_wait_group_with_unknown_count_is_unmodeled():
    k, _ = _ops("""
cute.gemm(mma, acc, tCrA[(None, None, 0, 0)], tCrA[(None, None, 0, 0)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(flag)
""")
    assert any(u.construct == "warpgroup.wait_group" for u in k.unmodeled)


def test_element_coordinate_is_still_a_load():
    """Only a subscript with an open mode is a stage view; ints in every mode load an element (of
    the stage its last coordinate names)."""
    _, ops = _ops("""
x = sA[(1, 2, 0)]
""")
    assert [(op.region.name, op.write) for op in ops if isinstance(op, ir.Access)] == [("sA[stage 0] (CTA 0)", False)]


def _verdict_of_variant(old: str, new: str):
    from pathlib import Path

    from cutespin import api

    path = Path(__file__).resolve().parents[2] / "samples" / "wgmma_release_early.py"
    text = path.read_text()
    assert old in text
    result = api.check_source(text.replace(old, new), str(path), Settings().with_overrides(verify_fixes=False),
                              with_fixes=False)
    kr = result.kernels[0]
    return kr.verdict, [(f.code, f.data.get("sub")) for f in kr.findings]


RELEASE_EARLY = '''                ab_pipeline.consumer_release(reading)  # BUG: the MMAs above still read this stage
                cute.nvgpu.warpgroup.wait_group(1)'''


def test_release_of_the_current_stage_after_wait_group_1_is_a_race(require_spin):
    """wait_group(1) leaves the group just committed in flight: it still reads the current stage."""
    verdict, findings = _verdict_of_variant(RELEASE_EARLY, '''                cute.nvgpu.warpgroup.wait_group(1)
                ab_pipeline.consumer_release(reading)''')
    assert verdict == "counterexample" and findings == [("CS201", "async_read")]


def test_release_of_the_current_stage_after_wait_group_0_is_ordered(require_spin):
    verdict, findings = _verdict_of_variant(RELEASE_EARLY, '''                cute.nvgpu.warpgroup.wait_group(0)
                ab_pipeline.consumer_release(reading)''')
    assert verdict == "verified" and findings == []


AMPERE = '''
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warp


class K:
    @cute.kernel
    def kernel(self, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 16)), 128)
        mma = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
        thr = mma.get_slice(tidx)
        tCrA = thr.make_fragment_A(thr.partition_A(sA))
        sA[tidx] = mC[tidx]
        cute.arch.sync_threads()
        tCrA[0] = sA[tidx]
'''


def test_a_warp_level_mma_fragment_is_registers_not_shared_memory():
    """Without warpgroup MMAs (Ampere `warp.MmaF16BF16Op`), make_fragment_A of an SMEM partition
    is a register fragment: storing into it is no write of the SMEM buffer (a false race on
    flash-msa's select kernel before)."""
    k = build_models(AMPERE, "k.py", Settings())[0]
    writes = [op for p in k.processes for op in ir.walk(p.variants[0])
              if isinstance(op, ir.Access) and op.write and op.region.name.startswith("sA")]
    assert [w.span.line for w in writes] == [16] * len(k.processes)


def _smem_write_lines(src: str) -> tuple:
    """(source lines of the writes of `sA`, number of warps)."""
    k = build_models(src, "k.py", Settings())[0]
    lines = [op.span.line for p in k.processes for op in ir.walk(p.variants[0])
             if isinstance(op, ir.Access) and op.write and op.region.name.startswith("sA")]
    return lines, len(k.processes)


def _line(src: str, needle: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if needle in line)


def test_the_warpgroup_layout_helper_alone_is_no_warpgroup_mma():
    """Sm120 kernels lay out shared memory with `warpgroup.make_smem_layout_atom` but multiply with
    warp-level MMAs: their fragments stay registers (a false race on the Sm120 block-scaled GEMM)."""
    src = AMPERE.replace("        tidx, _, _ = cute.arch.thread_idx()\n",
                         "        tidx, _, _ = cute.arch.thread_idx()\n"
                         "        atom = cute.nvgpu.warpgroup.make_smem_layout_atom(None, cutlass.Float16)\n")
    assert "make_smem_layout_atom" in src
    lines, warps = _smem_write_lines(src)
    assert lines == [_line(src, "sA[tidx] = mC[tidx]")] * warps  # not `tCrA[0] = ...`
    # A kernel that does use warpgroup MMAs still reads its fragments as views of the buffer.
    wg = src.replace("warp.MmaF16BF16Op", "cute.nvgpu.warpgroup.MmaF16BF16Op")
    assert _line(wg, "tCrA[0] = sA[tidx]") in _smem_write_lines(wg)[0]


def test_warpgroup_in_a_comment_or_string_is_no_warpgroup_mma():
    """cuDNN's SM120 block-sparse FP8 kernel says "warpgroup donates registers" in a comment and
    multiplies with warp-level MMAs: its fragments stay registers (copying Q into them was a
    write of `Q_smem`, a false race)."""
    src = AMPERE.replace("        tidx, _, _ = cute.arch.thread_idx()\n",
                         "        tidx, _, _ = cute.arch.thread_idx()\n"
                         "        # the producer warpgroup donates registers\n"
                         "        note = \"warpgroup\"\n")
    lines, warps = _smem_write_lines(src)
    assert lines == [_line(src, "sA[tidx] = mC[tidx]")] * warps


def test_a_partition_fragment_helper_of_shared_memory_is_registers():
    """`sm120_utils.partition_fragment_SFA(sSFA[...], thr_mma, tidx)` builds a register fragment
    shaped like the buffer's partition; stores into it are not writes of the buffer."""
    src = AMPERE.replace("tCrA = thr.make_fragment_A(thr.partition_A(sA))",
                         "tCrA = cutlass.utils.partition_fragment_SFA(sA, thr, tidx)")
    assert "partition_fragment_SFA" in src
    lines, warps = _smem_write_lines(src)
    assert lines == [_line(src, "sA[tidx] = mC[tidx]")] * warps


def test_an_mma_reading_the_whole_staged_buffer_reads_every_selected_stage():
    """An operand that selects no stage (here the whole ring) is read in each stage another
    access selects, so a write of that stage conflicts with it (split_stages)."""
    _, ops = _ops("""
cute.gemm(mma, acc, tCrA[(None, None, 0, 1)], tCrA[(None, None, 0, 1)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.gemm(mma, acc, tCrA[(None, None, 0, None)], tCrA[(None, None, 0, None)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(0)
""")
    reads = [op.region.name for op in ops if isinstance(op, ir.AsyncRead)]
    assert reads == ["sA[stage 1] (CTA 0)"] * 2 + ["sA (CTA 0)", "sA[stage 1] (CTA 0)"] * 2
    wait = next(op for op in ops if isinstance(op, ir.AsyncReadWait))
    assert len(wait.done_reads) == 6


UNKNOWN_STAGES_HEAD = HEAD.replace("    # cutespin: stages=2\n", "").replace(
    "cute.make_layout((64, 16, 2))", "self.a_smem_layout_staged")


def test_a_slice_at_a_stage_of_a_buffer_whose_stage_count_does_not_fold_is_that_stage():
    # The Hopper GEMMs: `sA` is laid out by a host helper (`a_smem_layout_staged`), so its stage
    # count is unknown, yet `tCrA[(None, None, k, s)]` still names stage s (as `tAsA[(None, s)]`
    # does for the TMA writes), not the whole buffer (which touches every stage).
    src = UNKNOWN_STAGES_HEAD + """\
        cute.nvgpu.warpgroup.fence()
        cute.gemm(mma, acc, tCrA[(None, None, 0, 1)], tCrA[(None, None, 1, 1)], acc)
        cute.nvgpu.warpgroup.commit_group()
        cute.nvgpu.warpgroup.wait_group(0)
"""
    k = build_models(src, "k.py", Settings())[0]
    reads = [op for op in ir.walk(k.processes[0].variants[-1]) if isinstance(op, ir.AsyncRead)]
    assert reads and {r.region.name for r in reads} == {"sA[stage 1] (CTA 0)"}



def test_a_long_k_loop_of_mmas_checked_as_one_trip_reads_its_stage_until_wait_group():
    """cuDNN's `gemm` helper loops `for k_outer in cutlass.range(K // 16, unroll=1)` over
    `cute.gemm`. Checked as one trip (past the unroll limit here; past the interpretation budget
    there), the trip's read at an unknown k stands for every trip's and stays in flight until
    `wait_group`, as every MMA's read does: not unmodeled as "does more than load and store"."""
    k, ops = _ops("""
cute.nvgpu.warpgroup.fence()
for k in cutlass.range(1024, unroll=1):
    cute.gemm(mma, acc, tCrA[(None, None, k, 0)], tCrA[(None, None, k, 0)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(0)
""")
    assert not k.unmodeled, k.unmodeled
    assert any("(1024 trips) only accesses memory: checked as one trip" in a for a in k.assumptions)
    reads = [op for op in ops if isinstance(op, ir.AsyncRead)]
    (wait,) = [op for op in ops if isinstance(op, ir.AsyncReadWait)]
    assert reads and {r.region.name for r in reads} == {"sA[stage 0] (CTA 0)"}
    assert wait.done_reads == reads


def test_a_slice_at_a_k_that_does_not_fold_is_somewhere_in_its_stage():
    """`tCrA[(None, None, k, 1)]` with k unknown reads part of stage 1: inexact, and never the
    other stage (which a producer may be refilling meanwhile)."""
    _, ops = _ops("""
cute.gemm(mma, acc, tCrA[(None, None, flag, 1)], tCrA[(None, None, flag, 1)], acc)
cute.nvgpu.warpgroup.commit_group()
cute.nvgpu.warpgroup.wait_group(0)
""")
    reads = [op for op in ops if isinstance(op, ir.AsyncRead)]
    assert reads and {(r.region.name, r.exact) for r in reads} == {("sA[stage 1] (CTA 0)", False)}
