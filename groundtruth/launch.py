"""One launch experiment in its own process (the runner's watchdog kills it if it hangs).

    python groundtruth/launch.py FILE.py --sample NAME [--launches N] [--small] [--no-gpu]

Imports FILE (a sample or a steered copy of one), builds the case's inputs, compiles with
``cute.compile``, prints ``GT-LAUNCH`` and only then launches: the runner starts its hang watchdog
at that marker. Each launch resets the output arrays to NaN, synchronises and compares them with
the NumPy reference; one ``GT-RESULT {json}`` line per launch, ``GT-ERROR {json}`` on an exception.
With ``--no-gpu`` (CPU tests) it stops after compiling, using NumPy arrays (set CUTE_DSL_ARCH).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases as cases_mod  # noqa: E402

import numpy as np  # noqa: E402


def emit(tag, obj):
    print(f"{tag} {json.dumps(obj)}", flush=True)


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compare(out: np.ndarray, want: np.ndarray, rtol, atol) -> dict:
    out = np.asarray(out).astype(np.float64)
    want = np.asarray(want).astype(np.float64)
    nan = int(np.isnan(out).sum())
    ok_mask = np.isclose(out, want, rtol=rtol, atol=atol, equal_nan=False)
    bad = int((~ok_mask).sum())
    diff = np.abs(np.nan_to_num(out, nan=np.inf) - want)
    return {"bad": bad, "nan": nan, "total": int(out.size),
            "max_err": float(np.max(diff)) if diff.size else 0.0}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--sample", required=True)
    ap.add_argument("--launches", type=int, default=1)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args(argv)

    case = cases_mod.case_for(a.sample)
    if case is None:
        emit("GT-ERROR", {"phase": "setup", "error": f"no case for {a.sample}"})
        return 2
    phase = "import"
    try:
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import from_dlpack
        import cuda.bindings.driver as cuda

        mod = load_module(Path(a.file))
        rng = np.random.default_rng(a.seed)
        arrays = case.build(rng, a.small)
        initial = {k: v.copy() for k, v in arrays.items()}
        want = case.ref(initial)

        phase = "setup"
        if a.no_gpu:
            torch = None
            dev = {k: v for k, v in arrays.items()}
            stream = cuda.CUstream(0)
        else:
            import torch
            dev = {k: torch.from_numpy(v.copy()).cuda() for k, v in arrays.items()}
            torch.cuda.synchronize()
            stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        cute_t = {k: from_dlpack(v, assumed_align=16) for k, v in dev.items()}

        compile_args, run_args = [], []
        for spec in case.args:
            if spec == "stream":
                compile_args.append(stream)
                run_args.append(stream)
            elif isinstance(spec, str):
                compile_args.append(cute_t[spec])
                run_args.append(cute_t[spec])
            else:
                kind = spec[0]
                if kind == "f32":
                    v = cutlass.Float32(spec[1])
                elif kind == "i32":
                    v = cutlass.Int32(spec[1])
                elif kind == "i32_len":
                    v = cutlass.Int32(arrays[spec[1]].shape[spec[2]])
                elif kind == "constexpr":
                    compile_args.append(spec[1])
                    continue
                else:
                    raise ValueError(f"bad arg spec {spec}")
                compile_args.append(v)
                run_args.append(v)
        full_args = compile_args

        phase = "compile"
        t0 = time.time()
        obj = getattr(mod, case.cls)()
        compiled = cute.compile(obj, *compile_args)
        emit("GT-COMPILED", {"seconds": round(time.time() - t0, 3)})
        if a.no_gpu:
            emit("GT-DONE", {"compiled_only": True})
            return 0

        print("GT-LAUNCH", flush=True)
        phase = "launch"
        call_args = run_args
        for i in range(a.launches):
            for k in case.outputs:
                dev[k].copy_(torch.from_numpy(initial[k]))
            torch.cuda.synchronize()
            t0 = time.time()
            if i == 0:
                try:
                    compiled(*call_args)
                except Exception as e:  # Constexpr values kept in the runtime signature?
                    if len(run_args) == len(full_args):
                        raise
                    print(f"GT-NOTE retrying with Constexpr arguments: {e}", flush=True)
                    call_args = full_args
                    compiled(*call_args)
            else:
                compiled(*call_args)
            torch.cuda.synchronize()
            dt = time.time() - t0
            res = {"launch": i, "seconds": round(dt, 4)}
            ok = True
            for k, w in want.items():
                cmp = compare(dev[k].cpu().numpy(), w, case.rtol, case.atol)
                res[k] = cmp
                ok = ok and cmp["bad"] == 0
            res["ok"] = ok
            emit("GT-RESULT", res)
        emit("GT-DONE", {})
        return 0
    except BaseException as e:  # noqa: BLE001 - everything is a result here
        emit("GT-ERROR", {"phase": phase, "error": f"{type(e).__name__}: {str(e)[:1500]}",
                          "trace": traceback.format_exc()[-2500:]})
        return 3


if __name__ == "__main__":
    sys.exit(main())
