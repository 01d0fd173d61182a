"""The one entry point of the GPU ground truth (issue 3).

Here (network, spin):   python groundtruth/gpu.py prepare
    downloads nvidia-cutlass-dsl 4.8.1 for Python 3.12 into .gtwheels/dl (ignored by git through
    .git/info/exclude), splits the 92 MB cu13 wheel in two, puts the first half and the three
    small wheels in .gtwheels/a and the second half in .gtwheels/b (each under the 64 MiB that one
    device run carries), regenerates the steered copies (steer.py) and prints the two device runs.

On the H200, two back-to-back device runs (the machine stays warm ~30 s between them):
    1. run  command="python3 groundtruth/gpu.py device-a"  carry=[".gtwheels/a"]
    2. run  command="python3 groundtruth/gpu.py device-b"  carry=[".gtwheels/b"]  timeout_s=600
    device-a stashes the first half under /root/gt and records the machine (env.txt);
    device-b joins the wheel, checks its sha256, installs the DSL with pip --target, and runs
    run.py over every sample and steered copy, writing results.jsonl, run.log and env.txt to $OUT.
    If the machine is still warm and holds the install, a later
        run  command="python3 groundtruth/gpu.py device-b --only NAME,..."  carry=[".gtwheels/b"]
    re-runs a subset without a new start.

Back here:  python groundtruth/gpu.py report DIR
    copies DIR/results.jsonl (the files the run brought back) to groundtruth/results/ and
    rewrites the table in groundtruth/RESULTS.md between its table markers.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WHEELS = ROOT / ".gtwheels"
DSL = "4.8.1"
BIG = f"nvidia_cutlass_dsl_libs_cu13-{DSL}-cp312-cp312-manylinux_2_28_x86_64.whl"
PARTS = [BIG + ".partaa", BIG + ".partab"]
HALF = 46 * 1024 * 1024
DEV_HOME = Path(os.environ.get("GT_HOME", "/root/gt"))
START = time.time()


def sh(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- here -----------------------------------------------------------------------------------

def prepare(args):
    exclude = ROOT / ".git" / "info" / "exclude"
    if exclude.exists() and "/.gtwheels/" not in exclude.read_text().split():
        with open(exclude, "a") as fh:
            fh.write("/.gtwheels/\n")
    dl = WHEELS / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    names = ["nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base", "nvidia-cutlass-dsl-libs-core",
             "nvidia-cutlass-dsl-libs-cu13"]
    if not (dl / BIG).exists() or len(list(dl.glob("*.whl"))) < 4:
        sh([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
            "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "-d", str(dl)]
           + [f"{n}=={DSL}" for n in names])
    a, b = WHEELS / "a", WHEELS / "b"
    for d in (a, b):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    for w in dl.glob("*.whl"):
        if w.name != BIG:
            shutil.copy2(w, a / w.name)
    data = (dl / BIG).read_bytes()
    (a / PARTS[0]).write_bytes(data[:HALF])
    (b / PARTS[1]).write_bytes(data[HALF:])
    manifest = {"wheel": BIG, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "parts": PARTS}
    (a / "manifest.json").write_text(json.dumps(manifest))
    (b / "manifest.json").write_text(json.dumps(manifest))
    for d in (a, b):
        mb = sum(f.stat().st_size for f in d.iterdir()) / 2**20
        print(f"{d.relative_to(ROOT)}: {mb:.1f} MiB")
    if not args.no_steer:
        sh([sys.executable, str(HERE / "steer.py")])
    print("\nNow, back to back (the second within ~30 s of the first):")
    print('  run  command="python3 groundtruth/gpu.py device-a"  carry=[".gtwheels/a"]')
    print('  run  command="python3 groundtruth/gpu.py device-b"  carry=[".gtwheels/b"]  timeout_s=600')
    print("then: python groundtruth/gpu.py report <files_at folder>")


# ---- on the device --------------------------------------------------------------------------

def probe(out: Path, name: str):
    cmds = [
        "nvidia-smi -L", "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv",
        "python3 --version", "which python3", "uname -r",
        "python3 -c 'import torch, cuda.bindings, numpy; print(torch.__version__, torch.version.cuda, "
        "cuda.bindings.__version__, numpy.__version__)'",
        "compute-sanitizer --version || /usr/local/cuda/bin/compute-sanitizer --version",
        "(compute-sanitizer --help || /usr/local/cuda/bin/compute-sanitizer --help) 2>&1 | grep -i -A2 racecheck",
        "nvcc --version | tail -2",
    ]
    with open(out / name, "a") as fh:
        for c in cmds:
            r = subprocess.run(c, shell=True, capture_output=True, text=True)
            fh.write(f"$ {c}\n{r.stdout}{r.stderr}\n")


def out_dir() -> Path:
    out = Path(os.environ.get("OUT", "/tmp/cutespin-groundtruth"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def device_a(args):
    out = out_dir()
    w = DEV_HOME / "wheels"
    w.mkdir(parents=True, exist_ok=True)
    src = WHEELS / "a"
    if not src.exists():
        sys.exit("no .gtwheels/a here: carry it (run with carry=['.gtwheels/a'])")
    for f in src.iterdir():
        shutil.copy2(f, w / f.name)
    print("stashed:", sorted(p.name for p in w.iterdir()), flush=True)
    probe(out, "env.txt")
    print((out / "env.txt").read_text())


def install() -> Path:
    site = DEV_HOME / "site"
    if (site / "nvidia_cutlass_dsl" / "dsl_packages" / "cutlass").exists():
        print("DSL already installed in", site, flush=True)
        return site
    w = DEV_HOME / "wheels"
    src = WHEELS / "b"
    if src.exists():
        w.mkdir(parents=True, exist_ok=True)
        for f in src.iterdir():
            shutil.copy2(f, w / f.name)
    manifest = json.loads((w / "manifest.json").read_text()) if (w / "manifest.json").exists() else None
    missing = [p for p in PARTS if not (w / p).exists()]
    if manifest is None or missing:
        sys.exit(f"wheel halves missing in {w}: {missing or 'manifest'}; the machine was not warm: "
                 f"run device-a and device-b again, back to back")
    big = w / manifest["wheel"]
    with open(big, "wb") as fh:
        for p in manifest["parts"]:
            fh.write((w / p).read_bytes())
    if sha256(big) != manifest["sha256"]:
        sys.exit("joined wheel has the wrong sha256")
    for p in manifest["parts"]:
        (w / p).unlink()
    sh([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
        "--target", str(site)] + [str(x) for x in sorted(w.glob("*.whl"))])
    return site


def device_b(args):
    out = out_dir()
    probe(out, "env.txt")
    site = install()
    pp = [str(site), str(site / "nvidia_cutlass_dsl" / "dsl_packages")]
    os.environ["PYTHONPATH"] = os.pathsep.join(pp + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, "-c", "import cutlass, cutlass.cute as cute; print('cutlass', cutlass.__file__)"],
                       capture_output=True, text=True)
    with open(out / "env.txt", "a") as fh:
        fh.write(f"$ import cutlass\n{r.stdout}{r.stderr}\n")
    print(r.stdout, r.stderr, flush=True)
    if r.returncode != 0:
        probe(out, "env.txt")
        sys.exit("the DSL does not import")
    budget = args.budget if args.budget else max(60.0, args.limit - (time.time() - START) - 90.0)
    cmd = [sys.executable, str(HERE / "run.py"), "--out", str(out), "--jobs", str(args.jobs), "--budget", str(budget),
           "--set", args.set]
    if args.only:
        cmd += ["--only", args.only]
    if args.no_gpu:
        cmd.append("--no-gpu")
    sh(cmd)


# ---- back here ------------------------------------------------------------------------------

def report(args):
    sys.path.insert(0, str(HERE))
    import report as report_mod

    src = Path(args.dir)
    dst = HERE / "results"
    dst.mkdir(exist_ok=True)
    for name in ("results.jsonl", "run.log", "env.txt"):
        if (src / name).exists():
            shutil.copy2(src / name, dst / name)
            os.chmod(dst / name, 0o644)
    report_mod.main([str(dst / "results.jsonl")])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--no-steer", action="store_true")
    p.set_defaults(fn=prepare)
    p = sub.add_parser("device-a")
    p.set_defaults(fn=device_a)
    p = sub.add_parser("device-b")
    p.add_argument("--only", default="")
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--set", default="all", choices=["all", "main", "followup"])
    p.add_argument("--budget", type=float, default=0.0)
    p.add_argument("--limit", type=float, default=590.0, help="the run's timeout_s, minus a margin")
    p.add_argument("--no-gpu", action="store_true", help="compile only (a CPU rehearsal of the device run)")
    p.set_defaults(fn=device_b)
    p = sub.add_parser("report")
    p.add_argument("dir")
    p.set_defaults(fn=report)
    a = ap.parse_args(argv)
    a.fn(a)


if __name__ == "__main__":
    main()
