"""Disassemble a sample's kernel as compiled for sm_90a, on the CPU (no GPU needed).

    CUTE_DSL_ARCH=sm_90a python groundtruth/tools/sass.py SAMPLE [NVDISASM]

Compiles the sample with the case's shapes through fake global-memory tensors (the same address
space as the device run, so code offsets match what compute-sanitizer prints), keeps the cubin and
prints ``nvdisasm -c`` of it. NVDISASM defaults to ``nvdisasm`` on PATH (the pip package
nvidia-cuda-nvdisasm carries one). Used for the evidence in RESULTS.md notes 2 and 3.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
import cases  # noqa: E402


def main():
    sample = sys.argv[1]
    nvdisasm = sys.argv[2] if len(sys.argv) > 2 else "nvdisasm"
    out = Path(tempfile.mkdtemp())
    os.environ.update(CUTE_DSL_KEEP="cubin", CUTE_DSL_DUMP_DIR=str(out))
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
    import numpy as np

    case = cases.case_for(sample)
    arrays = case.build(np.random.default_rng(0), False)
    dt = {np.dtype(np.float32): cutlass.Float32, np.dtype(np.float16): cutlass.Float16, np.dtype(np.int32): cutlass.Int32}
    args = []
    for spec in case.args:
        if spec == "stream":
            args.append(make_fake_stream())
        elif isinstance(spec, str):
            a = arrays[spec]
            args.append(make_fake_compact_tensor(dt[a.dtype], a.shape, stride_order=tuple(range(a.ndim - 1, -1, -1)),
                                                 assumed_align=16))
        elif spec[0] == "f32":
            args.append(cutlass.Float32(spec[1]))
        elif spec[0] == "i32":
            args.append(cutlass.Int32(spec[1]))
        elif spec[0] == "i32_len":
            args.append(cutlass.Int32(arrays[spec[1]].shape[spec[2]]))
        else:
            args.append(spec[1])
    spec = importlib.util.spec_from_file_location(sample, HERE.parent / "samples" / f"{sample}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cute.compile(getattr(mod, case.cls)(), *args)
    cubin = next(out.glob("*.cubin"))
    print(f"// {cubin.name}")
    sys.stdout.flush()
    subprocess.run([nvdisasm, "-c", str(cubin)], check=True)


if __name__ == "__main__":
    main()
