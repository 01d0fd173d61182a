"""Project-level resolution: kernels that use helpers and pipeline subclasses of sibling modules.

The package under tests/fixtures/pkg_project/mypkg is ours: `sync` holds barrier helpers, `pipes`
pipeline subclasses (re-exported by the package's `__init__`), `fakes` a class that only shares a
library pipeline's name, and `cycle_a`/`cycle_b`/`sync` import each other in a cycle.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.frontend import project as project_mod
from cutespin.frontend.discover import collect_aliases
from cutespin.frontend.project import Project, package_root
from cutespin.report import to_sarif, to_text

import libcst as cst

PKG = Path(__file__).resolve().parents[1] / "fixtures" / "pkg_project" / "mypkg"
SETTINGS = Settings(verify_fixes=False)


def line_of(path: Path, text: str, nth: int = 1) -> int:
    """The 1-based line of the nth line of `path` containing `text`."""
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return hits[nth - 1]


def check(name: str) -> dict:
    path = PKG / name
    result = api.check_source(path.read_text(), str(path), SETTINGS, with_fixes=False)
    assert result.error is None, result.error
    return {k.qualname: k for k in result.kernels}


@pytest.fixture(scope="module")
def handoff(require_spin):
    return check("handoff.py")


@pytest.fixture(scope="module")
def ring(require_spin):
    return check("ring.py")


@pytest.fixture(scope="module")
def partials(require_spin):
    return check("partials.py")


# ------------------------------------------------------------------------------ resolution


def test_package_root_and_relative_aliases():
    root, name = package_root(PKG / "handoff.py")
    assert root == PKG.parent and name == "mypkg.handoff"
    assert package_root(PKG / "__init__.py") == (PKG.parent, "mypkg")
    module = cst.parse_module("from .sync import publish as pub\nfrom . import sync\nfrom ..x import y\n"
                              "import mypkg.sync as S\n")
    aliases = collect_aliases(module, "mypkg")
    assert aliases["pub"] == "mypkg.sync.publish"
    assert aliases["sync"] == "mypkg.sync"
    assert aliases["S"] == "mypkg.sync"
    assert aliases["y"].startswith("..")  # climbs above the top level: resolves to nothing
    unknown = collect_aliases(module, None)
    assert unknown["pub"] == ".sync.publish"  # never mistaken for `cutlass.utils`-like names


def test_resolve_functions_classes_reexports_and_cycles():
    p = Project.for_file(str(PKG / "handoff.py"))
    f = p.resolve("mypkg.sync.publish")
    assert f.node.name.value == "publish" and Path(f.module.path) == (PKG / "sync.py").resolve()
    ring = p.resolve("mypkg.RingPipeline")  # re-exported by mypkg/__init__.py
    assert ring.qualname == "mypkg.pipes.RingPipeline" and ring.library_base == "PipelineTmaAsync"
    leaky = p.resolve("mypkg.pipes.LeakyPipeline")
    assert leaky.library_base == "PipelineTmaAsync" and [b.qualname for b in leaky.bases] == [ring.qualname]
    fake = p.resolve("mypkg.fakes.PipelineTmaAsync")
    assert fake.library_base is None  # same name as the library class, no inheritance
    # sync -> cycle_a -> cycle_b -> cycle_a: every name still resolves, nothing loops.
    assert p.resolve("mypkg.cycle_b.relay").node.name.value == "relay"
    assert p.resolve("mypkg.cycle_a.relay").node.name.value == "relay"  # cycle_a re-imports it
    assert p.resolve("mypkg.nothing.here") is None
    assert p.resolve("cutlass.pipeline.PipelineTmaAsync") is None  # the library is not the package


def test_module_cache_reparses_only_a_changed_module(tmp_path):
    pkg = tmp_path / "mypkg"
    shutil.copytree(PKG, pkg)
    kernel = pkg / "handoff.py"
    build_models(kernel.read_text(), str(kernel), SETTINGS)
    before = project_mod.MODULES.parses
    build_models(kernel.read_text(), str(kernel), SETTINGS)
    assert project_mod.MODULES.parses == before  # nothing changed on disk: no parse at all
    sync = pkg / "sync.py"
    sync.write_text(sync.read_text() + "\n# edited\n")
    st = sync.stat()
    os.utime(sync, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    build_models(kernel.read_text(), str(kernel), SETTINGS)
    assert project_mod.MODULES.parses == before + 1  # only sync.py again


def test_module_cap_is_an_assumption(monkeypatch):
    monkeypatch.setattr(project_mod, "MAX_MODULES", 0)
    (model, _) = build_models((PKG / "handoff.py").read_text(), str(PKG / "handoff.py"), SETTINGS)
    assert any("module mypkg.sync of the package not followed" in a for a in model.assumptions)
    assert model.deps == []


# ------------------------------------------------------------------------------ verdicts


def test_imported_helpers_verified(handoff):
    k = handoff["Handoff.kernel"]
    assert k.verdict == "verified", k.reason
    assert k.model.deps == [str((PKG / "sync.py").resolve())]


def test_a_buffer_not_saved_yet_resolves_its_siblings_like_a_saved_file(require_spin):
    # An editor's new file in the package (or one renamed but not yet written) is checked from
    # its text: its imports resolve from the folder it will be saved in.
    unsaved = PKG / "handoff_unsaved_copy.py"
    assert not unsaved.exists()
    result = api.check_source((PKG / "handoff.py").read_text(), str(unsaved), SETTINGS, with_fixes=False)
    k = next(k for k in result.kernels if k.qualname == "Handoff.kernel")
    assert k.verdict == "verified", k.reason
    assert k.model.deps == [str((PKG / "sync.py").resolve())]


def test_deadlock_inside_a_sibling_helper_is_located_there(handoff):
    k = handoff["HandoffStuck.kernel"]
    assert k.verdict == "counterexample"
    (f,) = k.findings
    assert f.code == "CS101"
    sync = (PKG / "sync.py").resolve()
    assert Path(f.path) == sync
    assert f.span.line == line_of(PKG / "sync.py", "cute.arch.mbarrier_wait(bar, phase)")
    # The call in the analyzed file that led into the helper (where an editor shows it).
    assert f.span.anchor.line == line_of(PKG / "handoff.py", "S.await_phase(ready, 0)", nth=2)
    blocked = [r for r in f.related if r.message.startswith("blocked")]
    assert blocked and all(Path(r.path) == sync for r in blocked)
    out = f.to_json()
    assert out["path"] == str(sync) and out["call_site"]["start"]["line"] == f.span.anchor.line


def test_pipeline_subclass_overrides_are_interpreted(ring):
    # RingSum acquires through sync.acquire_slot, whose parameter `pipeline` shadows the module's
    # `import cutlass.pipeline as pipeline`: the parameter wins.
    assert ring["RingSum.kernel"].verdict == "verified", ring["RingSum.kernel"].reason
    assert not ring["RingSum.kernel"].unmodeled
    k = ring["RingSumAllLanes.kernel"]  # the override's non-elected branch: every thread releases
    assert k.verdict == "counterexample"
    (f,) = k.findings
    assert f.code == "CS301" and Path(f.path) == (PKG / "pipes.py").resolve()
    assert f.span.line == line_of(PKG / "pipes.py", "self.sync_object_empty.arrive", nth=2)
    assert "ring.empty" in f.message  # barriers keep the kernel's name through the subclass's create


def test_subclass_of_a_subclass_uses_its_own_override(ring):
    k = ring["LeakySum.kernel"]  # LeakyPipeline.producer_acquire never waits for a free slot
    assert k.verdict == "counterexample"
    (f,) = k.findings
    assert Path(f.path) == (PKG / "pipes.py").resolve()
    assert f.span.line == line_of(PKG / "pipes.py", "self.sync_object_full.arrive(state.index")


def test_same_named_class_without_inheritance_stays_unmodeled(ring):
    k = ring["FakeSum.kernel"]
    assert k.verdict == "inconclusive"
    assert [(u.line, u.construct) for u in k.unmodeled] == [
        (line_of(PKG / "ring.py", "ring = PipelineTmaAsync.create("), "mypkg.fakes.PipelineTmaAsync.create"),
        (line_of(PKG / "ring.py", "ring.producer_acquire(state)", nth=3), ".producer_acquire(...)")]


def test_functools_partial_of_package_helpers(partials):
    assert partials["PartialHandoff.kernel"].verdict == "verified", partials["PartialHandoff.kernel"].reason
    k = partials["PartialTooEarly.kernel"]
    assert k.verdict == "counterexample"
    (f,) = k.findings
    assert f.code in ("CS101", "CS201")
    # relay (cycle_b) -> forward (cycle_a) -> sync.publish: the whole cycle is followed.
    assert {Path(d).name for d in k.model.deps} == {"sync.py", "cycle_a.py", "cycle_b.py"}


def test_unmodeled_inside_a_sibling_carries_its_path(tmp_path, require_spin):
    pkg = tmp_path / "mypkg"
    shutil.copytree(PKG, pkg)
    sync = pkg / "sync.py"
    sync.write_text(sync.read_text().replace("cute.arch.mbarrier_arrive(bar)",
                                             "cute.arch.mbarrier_arrive(bar, arrive_count=n_unknown)"))
    kernel = pkg / "handoff.py"
    result = api.check_source(kernel.read_text(), str(kernel), SETTINGS, with_fixes=False)
    k = {x.qualname: x for x in result.kernels}["Handoff.kernel"]
    assert k.verdict == "inconclusive"
    (u,) = k.unmodeled
    assert Path(u.path) == sync.resolve() and u.line == line_of(sync, "arrive_count=n_unknown")
    assert "sync.py line" in k.reason
    assert k.to_json()["unmodeled"][0]["path"] == str(sync.resolve())
    # The text and SARIF reports name the sibling's file, not the analyzed one, at that line.
    assert f"{sync.resolve()}:{u.line}:1: CS901 unmodeled" in to_text([result], [])
    sarif = json.loads(to_sarif([result], [], {}))
    locs = [r["locations"][0]["physicalLocation"] for r in sarif["runs"][0]["results"] if r["ruleId"] == "CS901"]
    assert locs and all(loc["artifactLocation"]["uri"].endswith("/mypkg/sync.py") for loc in locs)
    assert {loc["region"]["startLine"] for loc in locs} == {u.line}


def test_kernel_class_inherits_from_a_sibling_base(require_spin):
    kernels = check("inherit.py")
    k = kernels["Derived.kernel"]  # HandoffBase.__init__ sets the shape; HandoffBase.produce calls
    assert k.verdict == "verified", k.reason  # back into Derived.stage_row (the analyzed file)
    assert not any("block size not foldable" in a for a in k.assumptions)
    assert {Path(d).name for d in k.model.deps} == {"base.py", "sync.py"}
    bad = kernels["DerivedTwoWarps.kernel"]  # its __init__ calls super().__init__() then doubles `expected`
    assert bad.verdict == "counterexample"
    (f,) = bad.findings
    assert f.code == "CS101" and Path(f.path) == (PKG / "sync.py").resolve()
    assert f.span.anchor.line == line_of(PKG / "inherit.py", "await_phase(ready, 0)", nth=2)
    assert [p.role for p in bad.model.processes] == [p.role for p in k.model.processes]  # 2 warps, not 4


def test_namespace_package_above_the_root(tmp_path):
    """`ns/` has no `__init__.py` (PEP 420): `from ns.pkg.helpers import f` still resolves."""
    pkg = tmp_path / "ns" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def f(bar):\n    return bar\n")
    (pkg / "k.py").write_text("from ns.pkg.helpers import f\n")
    p = Project.for_file(str(pkg / "k.py"))
    assert p.root == tmp_path / "ns" and p.module_name == "pkg.k"
    assert p.resolve("ns.pkg.helpers.f").node.name.value == "f"
    assert p.resolve("pkg.helpers.f").node.name.value == "f"


def test_a_folder_without_init_inside_a_package_belongs_to_it(tmp_path):
    """cuDNN's `cudnn/block_sparse_attention/csrc/fwd/sm90_blk64/` has no `__init__.py` while
    every folder above it up to `cudnn/` has one: Python imports it as part of the package, and
    its kernels' `from cudnn._compat import X` resolve through the package's root."""
    top = tmp_path / "site" / "top"
    (top / "kernels" / "variant").mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "kernels" / "__init__.py").write_text("")
    (top / "_compat.py").write_text("def f(bar):\n    return bar\n")
    (top / "kernels" / "variant" / "k.py").write_text("from top._compat import f\n")
    assert package_root(top / "kernels" / "variant" / "k.py") == (tmp_path / "site", "top.kernels.variant.k")
    p = Project.for_file(str(top / "kernels" / "variant" / "k.py"))
    assert p.resolve("top._compat.f").node.name.value == "f"


def test_a_relative_import_outside_any_package_is_unmodeled_not_pure(tmp_path):
    """`from .helpers import body` in a folder without `__init__.py`: nothing to follow, and the
    helper may synchronize (here it does): the call is unmodeled, never taken as pure (the kernel
    was "verified" with no operations before)."""
    (tmp_path / "helpers.py").write_text("import cutlass.cute as cute\n\n\n@cute.jit\ndef body(mA):\n"
                                         "    cute.arch.sync_threads()\n")
    src = ("import cutlass\nimport cutlass.cute as cute\nfrom .helpers import body\n\n\nclass K:\n"
           "    @cute.jit\n    def __call__(self, mA: cute.Tensor):\n"
           "        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))\n\n"
           "    @cute.kernel\n    def kernel(self, mA: cute.Tensor):\n        body(mA)\n")
    (tmp_path / "k.py").write_text(src)
    m = build_models(src, str(tmp_path / "k.py"), SETTINGS)[0]
    assert [(u.construct, u.line) for u in m.unmodeled] == [("body", 13)], m.unmodeled
    assert "`.helpers.body`" in m.unmodeled[0].why and "__init__.py" in m.unmodeled[0].why


def test_constants_imported_from_a_sibling_module(tmp_path):
    pkg = tmp_path / "bars"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ids.py").write_text("_BAR_EPILOG: int = 3\n_BAR_OTHER = _BAR_EPILOG + 1\n")
    (pkg / "kern.py").write_text('''import cutlass
import cutlass.cute as cute

from .ids import _BAR_EPILOG, _BAR_OTHER


class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        cute.arch.barrier(barrier_id=_BAR_EPILOG, number_of_threads=64)
        cute.arch.barrier(barrier_id=_BAR_OTHER, number_of_threads=64)
''')
    path = pkg / "kern.py"
    m = build_models(path.read_text(), str(path), SETTINGS)[0]
    assert not m.unmodeled
    from cutespin import ir
    assert [o.barrier_id for o in m.processes[0].variants[0] if isinstance(o, ir.NamedBarrier)] == [3, 4]


def test_a_recursive_register_helper_of_sibling_modules_is_skipped(require_spin):
    # mypkg.regsort.sort recurses on a size the checker cannot fold and calls
    # mypkg.swap.compare_and_swap through local function variables: plain register code, so
    # the kernel is fully modeled instead of "helper calls nested too deeply".
    kr = check("topk.py")["TopK.kernel"]
    assert not kr.unmodeled, kr.unmodeled
    assert kr.verdict == "verified"


def test_plain_code_follows_package_imports_and_allows_recursion():
    from cutespin.frontend import interp
    proj = Project.for_file(str(PKG / "topk.py"))
    mod = proj.load("mypkg.regsort")
    assert interp._calls_only_plain_code(mod.functions["sort"], _fresh(mod), project=proj)
    # Without the project the imported helper cannot be followed: not known to be plain.
    assert not interp._calls_only_plain_code(mod.functions["sort"], _fresh(mod))


def _fresh(mod):
    """A copy of a parsed module without the plain-code cache (its answers depend on the project)."""
    import copy
    m = copy.copy(mod)
    m.__dict__.pop("_plain_code", None)
    return m


def test_library_names_a_sibling_module_re_exports_under_try_imports(tmp_path):
    # cudnn-frontend's `_cutlass_compat`: `try: from cutlass.memory import SmemAllocator,
    # TmemAllocator / except ModuleNotFoundError: from cutlass.utils import ...`, and the kernels
    # import the allocators from it. They are the library's classes, not unknown package calls.
    pkg = tmp_path / "compatpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_compat.py").write_text('''try:
    from cutlass.memory import SmemAllocator, TmemAllocator
except ModuleNotFoundError as error:
    if error.name != "cutlass.memory":
        raise
    from cutlass.utils import SmemAllocator, TmemAllocator
try:
    from cutlass.tensor_utils import LayoutEnum
except ModuleNotFoundError:
    from cutlass.utils import LayoutEnum, OnlyInTheFallback
''')
    (pkg / "kern.py").write_text('''import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from ._compat import SmemAllocator, TmemAllocator


class K:
    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        smem = SmemAllocator()
        holder = smem.allocate_array(cutlass.Int32, 1)
        tm = TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=64))
        tm.allocate(256)
        tm.wait_for_alloc()
        ptr = tm.retrieve_ptr(cutlass.Float32)
''')
    aliases = collect_aliases(cst.parse_module((pkg / "_compat.py").read_text()))
    assert aliases["SmemAllocator"] == "cutlass.memory.SmemAllocator"  # the `try` side wins
    assert aliases["LayoutEnum"] == "cutlass.tensor_utils.LayoutEnum"
    assert aliases["OnlyInTheFallback"] == "cutlass.utils.OnlyInTheFallback"
    path = pkg / "kern.py"
    m = build_models(path.read_text(), str(path), SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    from cutespin import ir
    accesses = [(o.region.name, o.write) for o in ir.walk(m.processes[0].variants[0]) if isinstance(o, ir.Access)]
    assert accesses == [("holder (CTA 0)", True), ("holder (CTA 0)", False)]


CONFIG_MODULE = """\
from dataclasses import dataclass


@dataclass(frozen=True)
class Params:
    flavor: int = 128
    ctas: int = 2


@dataclass(frozen=True)
class Cfg:
    CTAS: int
    THREADS: int


def make_cfg_64(params):
    return Cfg(CTAS=1, THREADS=64), "tma64"


def make_cfg_128(params):
    return Cfg(CTAS=params.ctas, THREADS=128), "tma128"
"""

CONFIG_KERNEL = """\
import cutlass
import cutlass.cute as cute

from cfgpkg.config import Params, make_cfg_64, make_cfg_128

PARAMS = globals().get("TEMPLATE_PARAMS", Params())
_MAKE_CFG = {64: make_cfg_64, 128: make_cfg_128}
CFG, _TMA = _MAKE_CFG[PARAMS.flavor](PARAMS)


@cute.kernel
def kernel(mA: cute.Tensor):
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def host(a: cute.Tensor):
    kernel(a).launch(grid=(2, 1, 1), block=(CFG.THREADS, 1, 1), cluster=(CFG.CTAS, 1, 1))
"""


def test_a_configuration_unpacked_from_a_call_picked_by_an_int_key_folds(tmp_path):
    # cuDNN frost's templates: `CFG, _TMA = _MAKE_CFG[PARAMS.d_flavor](PARAMS)`, with the dict keyed
    # by head dimension. CFG's cluster and block sizes fold, so the launch is the one modeled.
    pkg = tmp_path / "cfgpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text(CONFIG_MODULE)
    (pkg / "k.py").write_text(CONFIG_KERNEL)
    m = build_models(CONFIG_KERNEL, str(pkg / "k.py"), SETTINGS)[0]
    assert not m.unmodeled, m.unmodeled
    assert m.bounds["cluster"] == 2
    assert not any("not foldable" in a for a in m.assumptions), m.assumptions
    assert len({p.warp for p in m.processes}) == 4  # 128 threads
