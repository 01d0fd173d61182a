"""One model tracking races on every region, or one model per group of tracked regions.

Most statements of a large model are the race bookkeeping: each access updates every holder of
its region's bits (every lane class, every waited barrier's release sets, ...). Each region's
bookkeeping is its own, so the engine checks a model over `api.SLICE_STATEMENTS` a group of
tracked regions at a time (`api._models`): every part searches the kernel's interleavings again,
with a smaller state vector and fewer statements for `spin -a`. This benchmark measures both ways
on the same kernels, for each configuration group the engine would check: the whole model, then
its region slices at the engine's cap (or at --cap statements), one after the other. A search cut
short after --budget seconds shows `>`; `mem` marks one stopped by the memory bound.

    python bench/slices.py [--quick] [--budget S] [--cap N] [--file PATH ...]

--file adds kernels from files outside the repository (the corpus cache, say), never copied here.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, header, num, secs, table  # noqa: E402

import kernels as K  # noqa: E402
from cutespin import api, ir  # noqa: E402
from cutespin.config import Settings  # noqa: E402
from cutespin.engine import spin as engine  # noqa: E402
from cutespin.frontend import build_models  # noqa: E402
from cutespin.model import promela, symmetry  # noqa: E402

KERNELS = [
    ("samples/umma_2cta_pair_ok.py", lambda: (ROOT / "samples/umma_2cta_pair_ok.py").read_text()),
    ("samples/dsmem_jacobi_ok.py", lambda: (ROOT / "samples/dsmem_jacobi_ok.py").read_text()),
    ("samples/hopper_persistent_gemm_ok.py", lambda: (ROOT / "samples/hopper_persistent_gemm_ok.py").read_text()),
    ("bench ring: 2 CTAs × 2 consumer warps, 4 stages, loop 9",
     lambda: K.ring(consumers=2, stages=4, loop=9, cluster=2)),
]
QUICK = 2


def measure(text: str, tools, budget: float) -> dict:
    r = engine.check_model(text, tools, timeout=budget)
    return {"spin_a": r.timings.get("spin_a", 0.0), "total": r.seconds, "states": r.states, "status": r.status,
            "incomplete": r.incomplete}


def _cut(ms: list) -> str:
    stopped = [m["incomplete"] for m in ms if m["status"] == "incomplete"]
    return "mem " if "memory" in stopped else ">" if stopped else ""


def _verdict(ms: list) -> str:
    if any(m["status"] == "error" for m in ms):
        return "error found"
    return "cut short" if any(m["status"] == "incomplete" for m in ms) else "pass"


def rows_for(name: str, src: str, path: str, tools, budget: float, cap) -> list:
    """cap None: a quarter of each group's whole model (the samples are below the engine's cap)."""
    k = symmetry.reduce_identical_warps(build_models(src, path, Settings())[0])
    groups = promela.configuration_groups(k)
    rows = []
    for gi, group in enumerate(groups):
        sub = ir.restrict_configs(k, group) if len(groups) > 1 else k
        whole = promela.Lowering(sub)
        text = whole.build().text
        w = measure(text, tools, budget)
        sliced: dict = {}
        models = list(api._models(sub, sliced, cap=cap or max(whole.statements // 4, 1)))
        parts = [measure(pm.text, tools, budget) for pm in models if not isinstance(pm, str)]
        label = name if len(groups) == 1 else f"{name} [group {gi + 1}/{len(groups)}]"
        rows.append([label, num(len(whole.tracked_ids)), num(whole.statements // 1000), num(len(text) // 1000),
                     secs(w["spin_a"]), _cut([w]) + secs(w["total"]), num(w["states"]), _verdict([w]),
                     num(len(parts)), num(max(len(pm.text) for pm in models) // 1000),
                     secs(sum(p["spin_a"] for p in parts)), _cut(parts) + secs(sum(p["total"] for p in parts)),
                     num(sum(p["states"] for p in parts)), _verdict(parts)])
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"the first {QUICK} kernels only")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per search")
    ap.add_argument("--cap", type=int, default=None, help="statements per part (default: the engine's cap for "
                                                          "--file kernels, a quarter of each model for the rest)")
    ap.add_argument("--file", action="append", default=[], help="also the first kernel of this file")
    args = ap.parse_args(argv)
    tools = engine.find_tools("spin", None)
    print(header("Whole model vs one model per group of tracked regions", sys.argv))
    rows = []
    for name, make in KERNELS[:QUICK if args.quick else None]:
        rows += rows_for(name, make(), str(ROOT / name), tools, args.budget, args.cap)
    for path in args.file:
        rows += rows_for(Path(path).name, Path(path).read_text(), path, tools, args.budget,
                         args.cap or api.SLICE_STATEMENTS)
    print(table(["kernel", "regions", "whole k stmts", "whole KB", "whole spin -a s", "whole total s",
                 "whole states", "whole", "parts", "largest part KB", "parts spin -a s", "parts total s",
                 "parts states", "parts"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
