"""tcgen05 (UMMA) MMAs read their SMEM operands through descriptors: `make_fragment_A/B` of a
buffer is a view of it (not a register fragment), and the view's last index selects the stage
even when the buffer's stage count comes from a host layout."""
from pathlib import Path

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

HEAD = '''
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05


def make_mma():
    return cute.make_tiled_mma(tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 128, 16),
                                                    tcgen05.CtaGroup.ONE, tcgen05.OperandSource.SMEM,
                                                    tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K))


@cute.kernel
def kernel(tiled_mma: cute.TiledMma, a_layout: cute.ComposedLayout, acc_layout: cute.Layout):
    smem = cutlass.utils.SmemAllocator()
    sA = smem.allocate_tensor(element_type=cutlass.Float16, layout=a_layout.outer, byte_alignment=128,
                              swizzle=a_layout.inner)
    tCrA = tiled_mma.make_fragment_A(sA)
    acc = cute.make_fragment(acc_layout, cutlass.Float32)
    sA[(None, 1)].fill(0.0)
    cute.arch.sync_threads()
'''


def _reads(body: str, head: str = HEAD):
    # The barrier after the MMA keeps the model from being pruned away as synchronization-free.
    src = head + "".join("    " + line + "\n" for line in body.strip().splitlines()) + "    cute.arch.sync_threads()\n"
    k = build_models(src, "k.py", Settings())[0]
    ops = list(ir.walk(k.processes[0].variants[-1])) if k.processes else []
    # Reads of sA by the MMA: asynchronous reads (retired by the warp's tcgen05.commit), or plain
    # reads at issue for an MMA that is neither a tcgen05 nor a warpgroup one.
    return [op for op in ops if (isinstance(op, ir.AsyncRead) or isinstance(op, ir.Access) and not op.write)
            and op.region.name.startswith("sA")]


def test_umma_operand_view_selects_the_stage_by_its_last_index():
    reads = _reads("cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 1)], tCrA[(None, None, 0, 1)], acc)")
    assert [r.region.name for r in reads] == ["sA[stage 1] (CTA 0)"] * 2
    # A tcgen05 MMA (the file's only asynchronous MMAs): reading until a commit, none here.
    assert all(isinstance(r, ir.AsyncRead) and r.kind == "umma" for r in reads)


def test_a_file_without_asynchronous_mmas_keeps_register_fragments():
    # The same code with a warp-level MMA (Ampere, Sm120): make_fragment_A is a register
    # fragment, so the gemm reads no shared memory.
    head = HEAD.replace("tcgen05.", "warp.").replace("import tcgen05", "import warp")
    assert _reads("cute.gemm(tiled_mma, acc, tCrA[(None, None, 0, 1)], tCrA[(None, None, 0, 1)], acc)",
                  head=head) == []


def _check(path: Path):
    text = path.read_text()
    return list(api.iter_check(text, str(path), Settings()))


def test_umma_issued_before_its_stage_is_waited_for_is_a_race():
    (res,) = _check(SAMPLES / "umma_mma_before_wait.py")
    assert res.verdict == "counterexample"
    assert [(f.code, f.span.line) for f in res.findings] == [("CS201", 88)]


def test_two_cta_umma_before_wait_is_a_race_not_a_scope_finding(tmp_path):
    # The 2-CTA sample's only too-narrow site is the dealloc barrier's remote arrive at its end;
    # a run that never went through it reports the read of an incomplete TMA load as a race.
    text = (SAMPLES / "umma_2cta_pair_ok.py").read_text()
    ok = """                if is_leader_cta:
                    ab_full = ab_consumer.wait_and_advance()
                    cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, 0, ab_full.index)],
                              tCrB[(None, None, 0, ab_full.index)], tCtAcc)
                    ab_full.release()"""
    bug = """                if is_leader_cta:
                    cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, 0, ab_empty.index)],
                              tCrB[(None, None, 0, ab_empty.index)], tCtAcc)
                    ab_full = ab_consumer.wait_and_advance()
                    ab_full.release()"""
    assert ok in text
    path = tmp_path / "umma_2cta_before_wait.py"
    path.write_text(text.replace(ok, bug))
    (res,) = _check(path)
    assert res.verdict == "counterexample"
    assert [f.code for f in res.findings] == ["CS201"]
    assert res.findings[0].span.line == text.replace(ok, bug).splitlines().index(
        "                    cute.gemm(tiled_mma, tCtAcc, tCrA[(None, None, 0, ab_empty.index)],") + 1


def _warp_ops(path: Path, warp: int):
    k = build_models(path.read_text(), str(path), Settings())[0]
    p = next(p for p in k.processes if p.warp == warp)
    return list(ir.walk(p.variants[-1]))


def test_umma_reads_are_asynchronous_until_the_warps_tcgen05_commit():
    ops = _warp_ops(SAMPLES / "umma_mma_after_wait_ok.py", 1)
    # (Warp 1 also loads the accumulator from TMEM: tmem_ld reads, retired by their fence.)
    reads = [op for op in ops if isinstance(op, ir.AsyncRead) and op.region.name.startswith(("sA", "sB"))]
    waits = [op for op in ops if isinstance(op, ir.AsyncReadWait) and op.kind == "umma"]
    assert reads and {r.kind for r in reads} == {"umma"}
    # Each commit (the ring's consumer_release, then the accumulator's producer_commit) retires
    # what the warp issued before it; every read is retired by some commit.
    assert waits and all(w.pending == 0 for w in waits)
    assert [r for w in waits for r in w.done_reads] == reads


def test_a_plain_arrive_after_umma_retires_nothing():
    # PipelineTmaAsync's consumer_release is a plain arrive: no commit follows the first MMAs
    # before the refill, so the write-after-read race is reported at the producer's TMA load.
    (res,) = _check(SAMPLES / "umma_release_plain_arrive.py")
    assert [(f.code, f.span.line) for f in res.findings] == [("CS201", 79)]
    assert "tcgen05 MMA reading it may not be done" in res.findings[0].message
