"""The benchmarks still run (tiny --quick paths; nothing here is timed or compared)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from .kernels import kernel_source

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"

pytestmark = pytest.mark.usefixtures("require_spin")


def load(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_strip_atomic_keeps_lines_and_verdicts():
    common, kernels = load("common"), load("kernels")
    from cutespin.config import Settings
    from cutespin.engine.spin import check_model, find_tools
    from cutespin.frontend import build_models
    from cutespin.model.promela import lower

    for src, status in ((kernels.handoff(), "ok"), (kernels.handoff(bug="nosync"), "error")):
        pm = lower(build_models(src, "k.py", Settings())[0])
        plain = common.strip_atomic(pm.text)
        assert plain.count("\n") == pm.text.count("\n")
        assert "  atomic {\n" not in plain.split("init {")[0]
        assert check_model(plain, find_tools()).status == status


def test_latency_quick(capsys):
    assert load("latency").main(["--quick", "--only", "elected_handoff_race", "--no-corpus"]) == 0
    out = capsys.readouterr().out
    assert "| elected_handoff_race.py | counterexample |" in out
    assert "unchanged re-save" in out


def test_compile_quick(capsys):
    assert load("compile").main(["--quick", "--models", "small"]) == 0
    out = capsys.readouterr().out
    assert "| small" in out and "tcc" in out


def test_hash_quick(capsys):
    assert load("hash").main(["--quick"]) == 0
    out = capsys.readouterr().out
    cells = [c.strip() for c in next(line for line in out.splitlines() if line.startswith("| medium")).split("|")]
    assert cells[5] == "yes" and cells[-2] == "ok"


def test_statespace_quick(capsys):
    assert load("statespace").main(["--quick", "--sweeps", "branches"]) == 0
    assert "Runtime branches" in capsys.readouterr().out


def test_split_quick(capsys, require_spin):
    assert load("split").main(["--quick", "--budget", "10"]) == 0
    out = capsys.readouterr().out
    assert "| samples/pipeline_uniform_condition_ok.py" in out and "10/10" in out


def test_slices_quick(capsys, require_spin):
    assert load("slices").main(["--quick", "--budget", "10"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| samples/dsmem_jacobi_ok.py")]
    assert len(rows) == 5  # one per configuration group
    cells = [c.strip() for c in rows[-1].split("|")]
    assert int(cells[2]) == int(cells[9]) == 8  # eight tracked regions, one model each at a quarter's cap
    assert cells[8] == cells[14] == "pass"


def test_corpus_benchmark_checks_a_folder_and_writes_per_kernel_json(tmp_path):
    # `--cutlass PATH` takes any folder of CuTe DSL files: one sample stands in for the examples.
    examples = tmp_path / "examples" / "python" / "CuTeDSL"
    examples.mkdir(parents=True)
    (examples / "k.py").write_text((ROOT / "samples" / "elected_handoff_race.py").read_text())
    out = tmp_path / "out.json"
    assert load("corpus").main(["--only", "none", "--no-download", "--cache", str(tmp_path / "cache"),
                                "--cutlass", str(tmp_path), "--timeout", "10", "--json", str(out)]) == 0
    dump = json.loads(out.read_text())
    assert list(dump) == ["cutlass examples"]  # no package left marked partial
    [result] = dump["cutlass examples"]
    assert result["error"] is None
    assert [k["verdict"] for k in result["kernels"]] == ["counterexample"]


HANDOFF_HELPER = """\
import cutlass.cute as cute


@cute.jit
def handoff(bar, warp):
    if warp == 0:
        cute.arch.mbarrier_arrive(bar)
    else:
        cute.arch.mbarrier_wait(bar, 0)
"""

CALLS_THE_HELPER = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
tidx, _, _ = cute.arch.thread_idx()
if tidx == 0:
    cute.arch.mbarrier_init(bar, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
handoff(bar, cute.arch.make_warp_uniform(cute.arch.warp_idx()))
"""


def test_a_package_gets_the_corpus_packages_it_requires_even_when_they_download_in_the_same_run(
        tmp_path, monkeypatch, capsys):
    # On an empty cache the requirement was looked up before anything was downloaded: the first
    # run checked flash-attn-4 without quack-kernels, so every quack helper was an unknown call.
    corpus = load("corpus")
    pinned = dict(corpus.PINNED)
    sources = {
        "quack-kernels": {"quack/__init__.py": "", "quack/sync.py": HANDOFF_HELPER},
        "flash-attn-4": {
            "flash_attn_4-0.dist-info/METADATA": "Name: flash-attn-4\nRequires-Dist: quack-kernels>=0.6\n",
            "flash_attn/__init__.py": "",
            "flash_attn/k.py": kernel_source(CALLS_THE_HELPER).replace(
                "import cutlass\n", "import cutlass\nfrom quack.sync import handoff\n", 1)},
    }

    def fake_fetch(cache, name, version):  # what pip download and unpacking leave in the cache
        dest = cache / "src" / f"{name}-{version}"
        for rel, text in sources[name].items():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_text(text)
        return dest

    monkeypatch.setattr(corpus, "fetch", fake_fetch)
    out = tmp_path / "out.json"
    assert corpus.main(["--only", "quack-kernels,flash-attn-4", "--cache", str(tmp_path / "cache"),
                        "--timeout", "10", "--json", str(out)]) == 0
    assert f"quack-kernels-{pinned['quack-kernels']}" in capsys.readouterr().err
    [result] = json.loads(out.read_text())[f"flash-attn-4 {pinned['flash-attn-4']}"]
    [k] = result["kernels"]
    assert (k["verdict"], k["unmodeled"]) == ("verified", [])
