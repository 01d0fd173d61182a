"""Modules of another installed package (`Settings.extra_paths`, CLI `--extra-path`, pyproject
`extra-paths`, editor `extraPaths`): flash-attn-4 calls quack's helpers, which pip installs next
to it but which are outside flash-attn-4's own package."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cutespin import ir
from cutespin.config import Settings, settings_for_path
from cutespin.frontend import build_models
from cutespin.lsp.settings import parse_options

KERNEL = '''import cutlass
import cutlass.cute as cute

from helperpkg.sync import publish


class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp_idx == 0:
            publish(bar)
        else:
            cute.arch.mbarrier_wait(bar, 0)
'''

HELPER = '''import cutlass.cute as cute


@cute.jit
def publish(bar):
    cute.arch.mbarrier_arrive(bar)
'''


@pytest.fixture
def site(tmp_path):
    """Two packages in separate folders, as in two unpacked wheels."""
    app = tmp_path / "app" / "apppkg"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "kern.py").write_text(KERNEL)
    lib = tmp_path / "lib" / "helperpkg"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "sync.py").write_text(HELPER)
    return tmp_path


def _model(site, extra=()):
    path = site / "app" / "apppkg" / "kern.py"
    return build_models(path.read_text(), str(path), Settings(extra_paths=tuple(extra)))[0]


def test_without_the_extra_path_the_helper_is_unmodeled(site):
    m = _model(site)
    assert [u.construct for u in m.unmodeled] == ["helperpkg.sync.publish"]


def test_with_the_extra_path_the_helper_is_inlined(site):
    m = _model(site, [str(site / "lib")])
    assert not m.unmodeled
    assert any(Path(d).name == "sync.py" for d in m.deps)


def test_the_dsl_itself_is_never_taken_from_an_extra_path(site):
    # A site-packages folder holds cutlass too: its sources must not replace the modeled library
    # (here a stand-in whose `mbarrier_arrive` does nothing would drop the producer's arrive).
    arch = site / "lib" / "cutlass" / "cute"
    arch.mkdir(parents=True)
    for folder in (arch.parent, arch):
        (folder / "__init__.py").write_text("")
    (arch / "arch.py").write_text("def mbarrier_arrive(bar):\n    pass\n")
    (site / "lib" / "helperpkg" / "sync.py").write_text(
        "import cutlass.cute as cute\nfrom cutlass.cute.arch import mbarrier_arrive\n\n\n"
        "@cute.jit\ndef publish(bar):\n    mbarrier_arrive(bar)\n")
    m = _model(site, [str(site / "lib")])
    assert not m.unmodeled
    assert any(isinstance(op, ir.MbArrive) for p in m.processes for op in ir.walk(p.variants[0]))
    assert not any("cutlass" in Path(d).parts for d in m.deps)


def test_cli_flag_checks_the_handoff(site, require_spin):
    path = site / "app" / "apppkg" / "kern.py"
    out = subprocess.run([sys.executable, "-m", "cutespin", "check", "--format", "json", "--no-fixes",
                          "--extra-path", str(site / "lib"), str(path)], capture_output=True, text=True)
    report = json.loads(out.stdout)
    [k] = report["files"][0]["kernels"]
    assert k["verdict"] == "verified" and out.returncode == 0


def test_pyproject_extra_paths_are_relative_to_the_pyproject(site):
    (site / "app" / "pyproject.toml").write_text('[tool.cutespin]\nextra-paths = ["../lib"]\n')
    s = settings_for_path(site / "app" / "apppkg" / "kern.py")
    assert [Path(p).resolve() for p in s.extra_paths] == [(site / "lib").resolve()]
    (site / "app" / "pyproject.toml").write_text('[tool.cutespin]\nextra-paths = "../lib"\n')
    with pytest.raises(ValueError, match="extra-paths"):
        settings_for_path(site / "app" / "apppkg" / "kern.py")


def test_editor_extra_paths_reach_the_checker(site):
    opts, problems = parse_options({"extraPaths": [str(site / "lib")]})
    assert not problems
    s = opts.core_settings(site / "app" / "apppkg" / "kern.py")
    assert s.extra_paths == (str(site / "lib"),)
    # Not set in the editor: the pyproject's value (here none) stands.
    assert parse_options({})[0].core_settings(site / "app" / "apppkg" / "kern.py").extra_paths == ()
