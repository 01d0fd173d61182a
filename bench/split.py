"""One model for all of a kernel's configurations, or one model per configuration group.

Each configuration group (trip counts and uniform-condition values that lower alike) is a branch
of every proctype of the whole model, and `spin -a` takes time quadratic in a proctype's
statements, so a whole model of k groups costs about k times what its k part models cost together
to generate. The engine splits a kernel whose whole model is over `api.SPLIT_MODEL_CHARS`; this
benchmark measures both ways on the same kernels: the whole model, then each part one after the
other (`spin -a`, the build of pan and the search summed over the parts). A search cut short
after --budget seconds shows `>`.

    python bench/split.py [--quick] [--budget S]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, header, num, secs, table  # noqa: E402

import kernels as K  # noqa: E402
from cutespin import ir  # noqa: E402
from cutespin.config import Settings  # noqa: E402
from cutespin.engine import spin as engine  # noqa: E402
from cutespin.frontend import build_models  # noqa: E402
from cutespin.model import symmetry  # noqa: E402
from cutespin.model.promela import lower  # noqa: E402

# (name, source factory, loop bound or None for the default)
KERNELS = [
    ("samples/pipeline_uniform_condition_ok.py", lambda: (ROOT / "samples/pipeline_uniform_condition_ok.py").read_text(), None),
    ("samples/tma_ring_wrap_parity.py (cex)", lambda: (ROOT / "samples/tma_ring_wrap_parity.py").read_text(), None),
    ("samples/hopper_persistent_gemm_ok.py", lambda: (ROOT / "samples/hopper_persistent_gemm_ok.py").read_text(), None),
    ("bench ring: 2 consumer warps, 3 stages, loop 8", lambda: K.ring(consumers=2, stages=3, loop=8), None),
    ("bench ring: 4 consumer warps, 4 stages, loop 20", lambda: K.ring(consumers=4, stages=4, loop=20), None),
    ("bench ring: 6 consumer warps, 4 stages, loop 24", lambda: K.ring(consumers=6, stages=4, loop=24), None),
    ("bench ring: 2 CTAs × 1 consumer warp, 4 stages, loop 24",
     lambda: K.ring(consumers=1, stages=4, loop=24, cluster=2), None),
]
QUICK = 2


def measure(text: str, tools, budget: float) -> dict:
    r = engine.check_model(text, tools, timeout=budget)
    return {"spin_a": r.timings.get("spin_a", 0.0), "compile": r.timings.get("compile", 0.0),
            "total": r.seconds, "states": r.states, "status": r.status}


def row(name: str, src: str, loop, tools, budget: float) -> list:
    settings = Settings() if loop is None else Settings(loop_bound=loop)
    k = symmetry.reduce_identical_warps(build_models(src, name, settings)[0])
    whole = lower(k)
    w = measure(whole.text, tools, budget)
    parts = [measure(lower(ir.restrict_configs(k, g)).text, tools, budget) for g in whole.config_groups]
    split = {key: sum(p[key] for p in parts) for key in ("spin_a", "compile", "total", "states")}
    cut = lambda m, s: (">" if any(p["status"] == "incomplete" for p in m) else "") + secs(s)  # noqa: E731
    return [name, f"{len(k.configs)}/{len(whole.config_groups)}", num(len(whole.text) // 1000),
            secs(w["spin_a"]), cut([w], w["total"]), num(w["states"]),
            secs(split["spin_a"]), cut(parts, split["total"]), num(split["states"])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"the first {QUICK} kernels only")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per search")
    args = ap.parse_args(argv)
    tools = engine.find_tools("spin", None)
    print(header("Whole model vs one model per configuration group", sys.argv))
    rows = [row(name, make(), loop, tools, args.budget) for name, make, loop in KERNELS[:QUICK if args.quick else None]]
    print(table(["kernel", "configs/groups", "whole KB", "whole spin -a s", "whole total s", "whole states",
                 "parts spin -a s", "parts total s", "parts states"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
