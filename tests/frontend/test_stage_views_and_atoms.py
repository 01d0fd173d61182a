"""Stage views indexed again, integer layouts, element atoms and a block size tied to an attribute
(triage of the CUTLASS CuTe DSL examples, docs/corpus-findings.md, *cutlass examples (fifth session)*)."""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import kernel_source


def _model(src: str):
    ms = build_models(src, "k.py", Settings())
    assert len(ms) == 1
    return ms[0]


def _check(src: str):
    settings = Settings().with_overrides(verify_fixes=False)
    return api.check_source(src, "k.py", settings, with_fixes=False).kernels[0]


def _regions(m, prefix: str) -> set:
    return {o.region.name for p in m.processes for v in p.variants for o in ir.walk(v)
            if isinstance(o, ir.Access) and o.region.name.startswith(prefix)}


# A stage view (`sA_p = sA[None, None, stage]`) indexed on its own last mode (`sA_p[None, k]`,
# the sgemm register prefetch): k addresses elements of that stage, it does not select stage k.
STAGE_VIEW = """\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 4, self.num_stages)))
rA = cute.make_rmem_tensor((32, 4), cutlass.Float32)
if warp_idx == 0:
    cute.autovec_copy(rA, sA[None, None, 0])
cute.arch.sync_threads()
sA_p = sA[None, None, 0]
for k in cutlass.range_constexpr(2):
    cute.autovec_copy(sA_p[None, k], rA[None, k])
if warp_idx == 0:
    cute.autovec_copy(rA, sA[None, None, {refill}])
"""


def test_a_stage_view_indexed_on_its_last_mode_stays_on_its_stage(require_spin):
    src = kernel_source(STAGE_VIEW.format(refill=1), threads=128, init="self.num_stages = 2\n")
    reads = {o.region.name for p in _model(src).processes for v in p.variants for o in ir.walk(v)
             if isinstance(o, ir.Access) and not o.write}
    assert reads == {"sA[stage 0] (CTA 0)"}
    r = _check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    # Refilling the stage the other warps read, with no barrier after their reads, is a race.
    r = _check(kernel_source(STAGE_VIEW.format(refill=0), threads=128, init="self.num_stages = 2\n"))
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"


# cta_norm's block reduction: lane 0 of each warp writes acc[warp], warp 0 reduces them into
# acc[n_warps], everyone reads acc[n_warps]; the buffer is reused by a second reduction.
CTA_REDUCE = """\
tidx, _, _ = cute.arch.thread_idx()
warp = tidx // 32
lane = tidx % 32
smem = cutlass.utils.SmemAllocator()
acc = smem.allocate_tensor(cutlass.Float32, self.n_warps + 1)
for _ in cutlass.range_constexpr(2):
    if lane == 0:
        acc[warp] = mA[tidx]
    cute.arch.sync_threads()
    if warp == 0:
        v = acc[lane] if lane < self.n_warps else cutlass.Float32(0)
        acc[{result}] = v
    cute.arch.sync_threads()
    mA[tidx] = acc[{result}]
"""


def _reduce_src(result: str) -> str:
    return kernel_source(CTA_REDUCE.format(result=result), threads="self.n_warps * 32",
                         init="self.n_warps = n_warps\n").replace("def __init__(self):",
                                                                  "def __init__(self, n_warps):")


def test_block_reduction_slots_are_element_atoms(require_spin):
    src = _reduce_src("self.n_warps")
    m = _model(src)
    assert any("n_warps = 4" in a for a in m.assumptions), m.assumptions  # solved from the block size
    assert {"acc[0] (CTA 0)", "acc[3] (CTA 0)", "acc[4] (CTA 0)"} <= _regions(m, "acc")
    r = _check(src)
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    # The result in warp 0's own slot: the next reduction's `acc[0] = ...` by warp 0 can overwrite
    # it while the other warps still read it.
    r = _check(_reduce_src("0"))
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"


def test_integer_layout_is_flat_and_atoms_fall_back_to_blocks():
    def regions(n: int) -> set:
        return _regions(_model(kernel_source(f"""\
            tidx, _, _ = cute.arch.thread_idx()
            smem = cutlass.utils.SmemAllocator()
            buf = smem.allocate_tensor(cutlass.Float32, 64)
            for i in cutlass.range_constexpr({n}):
                if tidx == i:
                    buf[i] = mA[i]
            """, threads=64)), "buf")
    # An integer layout is a compact rank-1 one: a known index names one element.
    assert regions(4) == {"buf[0] (CTA 0)", "buf[1] (CTA 0)", "buf[2] (CTA 0)", "buf[3] (CTA 0)"}
    # 20 atoms are too many: the 32-element block stays one region.
    assert regions(20) == {"buf[0:32] (CTA 0)"}
