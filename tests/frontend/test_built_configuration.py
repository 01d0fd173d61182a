"""A kernel configuration the caller builds with the module's own builder (cuDNN frost's idiom).

frost's kernels take `cfg: cutlass.Constexpr` from a launcher `host(cfg, ...)` that some engine
outside the kernels calls with `build_cfg(...)`, a dataclass whose fields default to constants of
a sibling module (`b_t: int = CFG.B_T`, `CFG = Cfg()`). Unresolved, every warp role, stage count
and the launch's block (`cfg.threads_per_cta`) stayed unknown: the block was guessed at 128
threads, and the roles the guess left out gave a false deadlock. Its barriers' `init()` reads
`init_count[stage]` where `isinstance(init_count, (tuple, list))`, which also did not fold.
"""
from __future__ import annotations

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

SETTINGS = Settings(verify_fixes=False)

CONFIG = """\
from dataclasses import dataclass


@dataclass(frozen=True)
class Cfg:
    CONSUMER_WARP: int = 0
    PRODUCER_WARP: int = 1
    THREADS_PER_WARP: int = 32


CFG = Cfg()
"""

KERNEL = """\
from dataclasses import dataclass

import cutlass
import cutlass.cute as cute

from .config import CFG


@dataclass
class KernelCfg:
    d: int
    consumer_warp: int = CFG.CONSUMER_WARP
    producer_warp: int = CFG.PRODUCER_WARP
    threads_per_warp: int = CFG.THREADS_PER_WARP
    threads_per_cta: int = 0


def build_cfg(d: int) -> KernelCfg:
    cfg = KernelCfg(d=d)
    cfg.threads_per_cta = cfg.threads_per_warp * 2
    return cfg


@cute.jit
def init_bar(bar, init_count, stage):
    if isinstance(init_count, (tuple, list)):
        count = int(init_count[stage])
    else:
        count = int(init_count)
    cute.arch.mbarrier_init(bar, count)


@cute.kernel
def kern(cfg: cutlass.Constexpr, mA: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, num_elems=1)
    warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp_idx == 0:
        init_bar(bar, COUNT, 0)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp_idx == cfg.producer_warp:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bar)
    elif warp_idx == cfg.consumer_warp:
        cute.arch.mbarrier_wait(bar, 0)


@cute.jit
def host(cfg: cutlass.Constexpr, mA: cute.Tensor):
    kern(cfg, mA).launch(grid=(1, 1, 1), block=(cfg.threads_per_cta, 1, 1))
"""


def package(tmp_path, count: str = "1"):
    pkg = tmp_path / "frostlike"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text(CONFIG)
    path = pkg / "kern.py"
    path.write_text(KERNEL.replace("COUNT", count))
    return path


def test_the_builders_result_fixes_the_block_and_the_roles(tmp_path):
    path = package(tmp_path)
    m = build_models(path.read_text(), str(path), SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    assert len(m.processes) == 2  # block = threads_per_warp * 2, through the sibling's CFG
    assert not any("block size not foldable" in a for a in m.assumptions), m.assumptions
    assert any("`cfg` (a compile-time argument the caller passes) is what the module's `build_cfg(...)` builds"
               in a for a in m.assumptions), m.assumptions
    producer = next(p for p in m.processes if p.warp == 1)
    assert [type(o).__name__ for o in ir.walk(producer.variants[0]) if isinstance(o, (ir.MbArrive, ir.MbWait))] \
        == ["MbArrive"]


def test_an_init_count_given_as_one_number_or_per_stage_folds(tmp_path):
    path = package(tmp_path, count="(1, 4)")
    m = build_models(path.read_text(), str(path), SETTINGS)[0]
    counts = [o.count for p in m.processes for o in ir.walk(p.variants[0]) if isinstance(o, ir.MbInit)]
    assert counts == [1]
    assert not any("arrival count" in a for a in m.assumptions), m.assumptions


def test_verified_and_a_count_the_roles_never_reach_deadlocks(tmp_path, require_spin):
    path = package(tmp_path)
    k = api.check_source(path.read_text(), str(path), SETTINGS, with_fixes=False).kernels[0]
    assert k.verdict == "verified", [f.message for f in k.findings]
    other = tmp_path / "two"
    other.mkdir()
    path = package(other, count="(2,)")
    k = api.check_source(path.read_text(), str(path), SETTINGS, with_fixes=False).kernels[0]
    assert k.verdict == "counterexample" and [f.code for f in k.findings] == ["CS101"]


def test_no_builder_for_the_attributes_used_leaves_the_argument_unknown(tmp_path):
    path = package(tmp_path)
    path.write_text(path.read_text().replace("-> KernelCfg:", ":"))
    m = build_models(path.read_text(), str(path), SETTINGS)[0]
    assert any("block size not foldable" in a for a in m.assumptions), m.assumptions


def test_a_builder_whose_class_lacks_an_attribute_the_launcher_uses_is_not_taken(tmp_path):
    # `cfg.threads_per_cta` is not declared by `KernelCfg` here: whatever the caller passes is no
    # object of that class, so the block stays a guess and says so.
    path = package(tmp_path)
    path.write_text(path.read_text().replace("    threads_per_cta: int = 0\n", ""))
    m = build_models(path.read_text(), str(path), SETTINGS)[0]
    assert any("block size not foldable" in a for a in m.assumptions), m.assumptions
    assert not any("build_cfg(...)` builds" in a for a in m.assumptions), m.assumptions
