"""Coverage of cutespin on published CuTe DSL kernels (issue 4's corpus benchmark).

Downloads pinned wheels into a cache folder outside the repository (`pip download --no-deps`;
nothing is committed or vendored), unpacks them there, and runs the checker on every file that
holds a `@cute.kernel`, two files at a time, each in its own process with a time budget. A
package's requirements that are also in the corpus (flash-attn-4 requires quack-kernels) are
given to the checker as extra paths, as if pip had installed them side by side. Prints a table
per package and writes the per-kernel results as JSON so two runs can be compared.

    python bench/corpus.py                       # all pinned packages (downloads once)
    python bench/corpus.py --cutlass PATH        # also PATH/examples/python/CuTeDSL
    python bench/corpus.py --only quack-kernels --timeout 10 --json out.json
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

# Measure this checkout's checker (a worktree of another commit included), not whatever the
# editable install points to: each file's child process imports `cutespin` from here.
_SERVER = Path(__file__).resolve().parents[1] / "server"
if str(_SERVER) not in sys.path:
    sys.path.insert(0, str(_SERVER))

PINNED = [
    ("quack-kernels", "0.6.5"), ("flash-attn-4", "4.0.0b36"), ("nvidia-cudnn-frontend", "1.32.0"),
    ("lightmoe", "0.1.0"), ("sonic-moe", "0.1.2.post1"), ("fast-trimul", "3.0.6"), ("flash-msa", "0.1.1"),
    ("mjolnir-kernel", "0.1.0"), ("kernel-fun", "0.2.0"), ("dist-moe", "0.1.0"),
    ("flashinfer-python", "0.7.4"),  # large and partly generated: reported separately
]
SEPARATE = {"flashinfer-python"}

# A kernel "synchronizes" when its source names something from the reference catalogue.
SYNC_RE = re.compile(
    r"mbarrier_|elect_one|sync_threads|\bbarrier\(|barrier_arrive|cluster_arrive|cluster_wait|fence_|"
    r"atomic_|\bred\(|tma_bar_ptr|producer_acquire|producer_commit|consumer_wait|consumer_release|"
    r"NamedBarrier|arrive_and_wait|tcgen05\.commit|cp_async_bulk|pipeline_init_")
KERNEL_RE = re.compile(r"@cute\.kernel|@cutlass\.cute\.kernel")


def default_cache() -> Path:
    return Path(os.environ.get("CUTESPIN_CORPUS_CACHE", Path.home() / ".cache" / "cutespin-corpus"))


def fetch(cache: Path, name: str, version: str) -> Path:
    """Download and unpack one pinned wheel (once); returns the folder of its sources."""
    dest = cache / "src" / f"{name}-{version}"
    if dest.exists():
        return dest
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = list(wheels.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not found:
        base = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(wheels)]
        done = subprocess.run(base + [f"{name}=={version}"])
        if done.returncode != 0:
            # Some packages require a newer Python than this one; their sources read the same.
            subprocess.run(base + ["--python-version", "3.12", f"{name}=={version}"], check=True)
        found = list(wheels.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not found:
        raise RuntimeError(f"no wheel for {name}=={version}")
    tmp = dest.with_suffix(".tmp")
    with zipfile.ZipFile(found[0]) as z:
        z.extractall(tmp)
    tmp.rename(dest)
    return dest


def kernel_files(root: Path) -> list:
    out = []
    for p in sorted(root.rglob("*.py")):
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        if KERNEL_RE.search(text):
            out.append(p)
    return out


def kernel_sources(text: str) -> dict:
    """qualname -> source text of each @cute.kernel function (plain scan, no checker involved)."""
    import libcst as cst

    out = {}
    try:
        module = cst.parse_module(text)
    except Exception:  # noqa: BLE001 - a file we cannot parse has no countable kernels
        return out

    def visit(body, prefix=""):
        for node in body:
            if isinstance(node, cst.ClassDef):
                visit(node.body.body, prefix + node.name.value + ".")
            elif isinstance(node, cst.FunctionDef):
                code = module.code_for_node(node)
                if KERNEL_RE.search(code.split("def ", 1)[0] + "def"):
                    out[prefix + node.name.value] = code

    visit(module.body)
    return out


def requirements(root: Path) -> set:
    """The distribution names an unpacked wheel requires (its METADATA's `Requires-Dist`),
    normalised like pip's (`quack_kernels` -> `quack-kernels`)."""
    out = set()
    for meta in root.glob("*.dist-info/METADATA"):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Requires-Dist:") and "extra ==" not in line:  # optional extras left out
                name = re.split(r"[\s<>=!~;\[(]", line.split(":", 1)[1].strip(), maxsplit=1)[0]
                out.add(name.lower().replace("_", "-"))
    return out


def extra_paths_for(root: Path, roots: dict) -> list:
    """The source folders of the corpus packages this one requires: where pip would have installed
    them next to it (flash-attn-4 calls quack-kernels' helpers), given to the checker as extra
    paths (`Settings.extra_paths`)."""
    return [str(roots[name]) for name in sorted(requirements(root)) if name in roots and roots[name] != root]


def cached_roots(cache: Path) -> dict:
    """The unpacked source folder of each pinned package the cache holds, by package name."""
    return {name: cache / "src" / f"{name}-{version}" for name, version in PINNED
            if (cache / "src" / f"{name}-{version}").exists()}


def check_one(path: str, timeout: float, extra: tuple = ()) -> dict:
    """Run in a child process: check one file, report results, wall time and peak memory."""
    import resource

    from cutespin import api
    from cutespin.config import Settings

    text = Path(path).read_text(errors="replace")
    settings = Settings(timeout=timeout, verify_fixes=False, extra_paths=tuple(extra))
    t0 = time.monotonic()
    rows = []
    try:
        fr = api.check_source(text, path, settings, with_fixes=False)
        error = fr.error
        for k in fr.kernels:
            rows.append({"qualname": k.qualname, "verdict": k.verdict, "reason": k.reason,
                         "findings": [f.code for f in k.findings],
                         "unmodeled": [f"{u.construct}: {u.why}" for u in k.unmodeled],
                         "seconds": k.stats.get("seconds", 0.0)})
    except Exception as e:  # noqa: BLE001 - counted as a crash
        error = f"crash: {type(e).__name__}: {e}"
    return {"path": path, "error": error, "kernels": rows, "wall": time.monotonic() - t0,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_file(path: Path, timeout: float, extra: list = ()) -> dict:
    budget = 60 + 20 * timeout  # the whole file: several kernels, each within `timeout`
    cmd = [sys.executable, __file__, "--one", str(path), "--timeout", str(timeout)]
    for folder in extra:
        cmd += ["--extra-path", folder]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return {"path": str(path), "error": f"crash: no result within {budget:.0f} s", "kernels": [], "wall": budget,
                "peak_mb": 0}
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"path": str(path), "error": f"crash: {out.stderr.strip()[-300:]}", "kernels": [], "wall": 0,
                "peak_mb": 0}


def summarize(name: str, root: Path, results: list) -> dict:
    kernels, sync, modeled, verdicts, reasons, secs = 0, 0, 0, Counter(), Counter(), []
    crashes = sum(1 for r in results if r["error"] and r["error"].startswith(("crash", "internal error")))
    for r in results:
        sources = kernel_sources(Path(r["path"]).read_text(errors="replace"))
        for k in r["kernels"]:
            kernels += 1
            src = sources.get(k["qualname"], "")
            if not SYNC_RE.search(src):
                continue
            sync += 1
            if not k["unmodeled"]:
                modeled += 1
            verdicts[k["verdict"]] += 1
            secs.append(k["seconds"])
            if k["verdict"] == "inconclusive":
                for u in k["unmodeled"] or [k["reason"] or "?"]:
                    reasons[u.split(":")[0]] += 1
    p95 = sorted(secs)[int(0.95 * (len(secs) - 1))] if secs else 0.0
    return {"package": name, "files": len(results), "kernels": kernels, "sync": sync, "crashes": crashes,
            "modeled": modeled, "verified": verdicts["verified"], "counterexample": verdicts["counterexample"],
            "inconclusive": verdicts["inconclusive"], "median_s": statistics.median(secs) if secs else 0.0,
            "p95_s": p95, "peak_mb": max((r["peak_mb"] for r in results), default=0),
            "top_reasons": reasons.most_common(5)}


def print_table(rows: list, file=None):
    file = file or sys.stdout
    hdr = ("package", "files", "kernels", "sync", "crashes", "modeled", "verified", "cex", "inconcl",
           "median s", "p95 s", "peak MB")
    print("| " + " | ".join(hdr) + " |", file=file)
    print("|" + "---|" * len(hdr), file=file)
    for r in rows:
        print(f"| {r['package']} | {r['files']} | {r['kernels']} | {r['sync']} | {r['crashes']} | {r['modeled']} | "
              f"{r['verified']} | {r['counterexample']} | {r['inconclusive']} | {r['median_s']:.2f} | "
              f"{r['p95_s']:.2f} | {r['peak_mb']:.0f} |", file=file)
    print(file=file)
    for r in rows:
        if r["top_reasons"]:
            print(f"- {r['package']}: top reasons for inconclusive: "
                  + "; ".join(f"{n}x {why}" for why, n in r["top_reasons"]), file=file)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--cutlass", type=Path, help="a NVIDIA/cutlass checkout (its examples/python/CuTeDSL)")
    ap.add_argument("--only", help="comma-separated package names")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per kernel")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write per-kernel results here")
    ap.add_argument("--no-download", action="store_true", help="use only what the cache holds")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--extra-path", action="append", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(check_one(args.one, args.timeout, tuple(args.extra_path))))
        return 0

    packages = []
    only = set(args.only.split(",")) if args.only else None
    for name, version in PINNED:
        if only and name not in only:
            continue
        try:
            root = (args.cache / "src" / f"{name}-{version}") if args.no_download else fetch(args.cache, name, version)
        except (subprocess.CalledProcessError, RuntimeError) as e:
            print(f"skipped {name}=={version}: {e}", file=sys.stderr)
            continue
        if root.exists():
            packages.append((f"{name} {version}", root))
    # Every pinned package in the cache, by name: what another one may require. Looked up after
    # the downloads, so that a first run on an empty cache gives flash-attn-4 its quack-kernels.
    roots = cached_roots(args.cache)
    if args.cutlass:
        ex = args.cutlass / "examples" / "python" / "CuTeDSL"
        packages.append(("cutlass examples", ex if ex.exists() else args.cutlass))

    rows, dump = [], {}
    for label, root in packages:
        files = kernel_files(root)
        extra = extra_paths_for(root, roots)
        if extra:
            print(f"{label}: its required packages from {', '.join(extra)}", file=sys.stderr)
        results = []
        with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for result in pool.map(lambda p: run_file(p, args.timeout, extra), files):
                results.append(result)
                if args.json:
                    # Written as each file finishes: an interrupted run keeps the files it checked
                    # (a package still running is marked so in the JSON, by its label).
                    args.json.write_text(json.dumps({**dump, f"{label} (partial)": results}, indent=1))
        dump[label] = results
        rows.append(summarize(label, root, results))
        print(f"done: {label} ({len(files)} files)", file=sys.stderr)
        print_table(rows[-1:], file=sys.stderr)  # partial results survive an interrupted run
        if args.json:
            args.json.write_text(json.dumps(dump, indent=1))
    main_rows = [r for r in rows if r["package"].split()[0] not in SEPARATE]
    sep_rows = [r for r in rows if r["package"].split()[0] in SEPARATE]
    print_table(main_rows)
    if sep_rows:
        print("\nReported separately (large, partly generated):\n")
        print_table(sep_rows)
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
