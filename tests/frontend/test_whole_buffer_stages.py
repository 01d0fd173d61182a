"""An access of a staged buffer that selects no stage touches every stage.

Each stage of `sD` is a region, and so is the buffer taken whole: a write of the whole buffer
(`sD.store(...)`, a TMA load into `sD`) or of a view at a stage index that did not fold
(`sD[None, None, idx]`) used to race with nothing a stage view `sD[None, None, 1]` read, and
such kernels came out verified. Now the whole-buffer access is also an access of every stage
another access selects: through an unfolded index the race is possible (inconclusive, P16),
through the whole buffer it is a counterexample. A copy into a known other stage stays ordered.
"""
import pytest

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

# Warp 0 does `{first}`, warp 1 `{second}`, with no barrier in between.
BODY = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
sD = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 32, self.stages)), byte_alignment=128)
rD = cute.make_rmem_tensor((32, 32), cutlass.Float32)
cp_atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
idx = mA.shape[0] % self.stages
if warp_idx == 0:
    {first}
if warp_idx == 1:
    {second}
"""


def check(first: str, second: str):
    src = kernel_source(BODY.format(first=first, second=second), init="self.stages = 2\n")
    src = src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom):")
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return src, k


# Writes of the stage `idx` names, one per form the DSL writes shared memory with.
UNKNOWN_STAGE_WRITES = {
    "element": "sD[0, 0, idx] = 1.0",
    "store": "sD[None, None, idx].store(rD.load())",
    "copy": "cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), rD, sD[None, None, idx])",
    "autovec_copy": "cute.autovec_copy(rD, sD[None, None, idx])",
    "tma_load": "cute.copy(tma_atom, mA[None, None, 0], sD[None, None, idx], tma_bar_ptr=bar)",
    "cp_async": "cute.copy(cp_atom, mA[None, None, 0], sD[None, None, idx])",
}
# Reads of the stage `idx` names.
UNKNOWN_STAGE_READS = {
    "element": "x = sD[0, 0, idx]",
    "load": "x = sD[None, None, idx].load()",
    "autovec_copy": "cute.autovec_copy(sD[None, None, idx], rD)",
    "tma_store": "cute.copy(tma_atom, sD[None, None, idx], mA[None, None, 0])",
}


@pytest.mark.parametrize("write", UNKNOWN_STAGE_WRITES.values(), ids=UNKNOWN_STAGE_WRITES.keys())
def test_a_write_at_an_unknown_stage_races_with_a_read_of_stage_1(require_spin, write):
    src, k = check(write, "x = sD[None, None, 1].load()")
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, write)}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible


@pytest.mark.parametrize("read", UNKNOWN_STAGE_READS.values(), ids=UNKNOWN_STAGE_READS.keys())
def test_a_read_at_an_unknown_stage_races_with_a_write_of_stage_1(require_spin, read):
    src, k = check("sD[None, None, 1].store(rD.load())", read)
    assert k.verdict == "inconclusive", (k.verdict, k.reason)
    assert f"line {line_of(src, read)}" in k.reason
    (f,) = k.findings
    assert f.code == "CS201" and f.possible


# The whole buffer, selected exactly: a race with a stage is a counterexample.
WHOLE_BUFFER_WRITES = {
    "store": "sD.store(rD.load())",
    "fill": "sD.fill(0.0)",
    "tma_load": "cute.copy(tma_atom, mA, sD, tma_bar_ptr=bar)",
}


@pytest.mark.parametrize("write", WHOLE_BUFFER_WRITES.values(), ids=WHOLE_BUFFER_WRITES.keys())
def test_a_write_of_the_whole_buffer_races_with_a_read_of_stage_1(require_spin, write):
    src, k = check(write, "x = sD[None, None, 1].load()")
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    (f,) = k.findings
    assert f.code == "CS201" and not f.possible
    assert f.span.line in (line_of(src, write), line_of(src, "x = sD[None, None, 1]"))


@pytest.mark.parametrize("read", ["x = sD.load()", "cute.copy(tma_atom, sD, mA)"], ids=["load", "tma_store"])
def test_a_read_of_the_whole_buffer_races_with_a_write_of_stage_1(require_spin, read):
    _, k = check("cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), rD, sD[None, None, 1])",
                 read)
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert [f.code for f in k.findings] == ["CS201"] and not k.findings[0].possible


def test_an_element_of_stage_1_races_with_a_read_of_stage_1(require_spin):
    _, k = check("sD[0, 0, 1] = 1.0", "x = sD[None, None, 1].load()")
    assert k.verdict == "counterexample", (k.verdict, k.reason)


def test_an_element_of_stage_0_is_not_in_stage_1(require_spin):
    _, k = check("sD[0, 0, 0] = 1.0", "x = sD[None, None, 1].load()")
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_a_write_of_a_known_other_stage_is_verified(require_spin):
    _, k = check("sD[None, None, 0].store(rD.load())", "x = sD[None, None, 1].load()")
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_a_tma_load_into_the_whole_buffer_publishes_every_stage(require_spin):
    """One copy, one completion: waiting on it orders the reads of each stage after the load."""
    load = ("with cute.arch.elect_one():\n"
            "        cute.arch.mbarrier_arrive_and_expect_tx(bar, 4096)\n"
            "        cute.copy(tma_atom, mA, sD, tma_bar_ptr=bar)")
    _, k = check(load, "cute.arch.mbarrier_wait(bar, 0)\n    x = sD[None, None, 0].load()\n"
                       "    y = sD[None, None, 1].load()\n    z = sD.load()")
    assert k.verdict == "verified", (k.verdict, k.reason)


def test_whole_buffer_accesses_are_accesses_of_each_selected_stage():
    src = kernel_source(BODY.format(first="cute.copy(tma_atom, mA, sD, tma_bar_ptr=bar)\n    sD.store(rD.load())",
                                    second="x = sD[None, None, 1].load()\n    y = sD[None, None, 0].load()"),
                        init="self.stages = 2\n")
    src = src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom):")
    (m,) = build_models(src, "k.py", SETTINGS)
    ops = list(ir.walk(m.processes[0].variants[-1]))
    (load,) = [op for op in ops if isinstance(op, ir.TmaLoad)]
    assert [r.name for r in load.regions()] == ["sD (CTA 0)", "sD[stage 0] (CTA 0)", "sD[stage 1] (CTA 0)"]
    stores = [op.region.name for op in ops if isinstance(op, ir.Access) and op.write]
    assert stores == ["sD (CTA 0)", "sD[stage 0] (CTA 0)", "sD[stage 1] (CTA 0)"]
