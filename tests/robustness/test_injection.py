"""Injection and execution: the analysed file is never imported or run (nor what it imports); no
identifier, string or comment of it reaches the Promela model (only validated numbers do); no
shell anywhere in the product; the engine's temp folders are private (0700)."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cutespin import api
from cutespin.config import Settings
from cutespin.engine import spin as engine
from cutespin.frontend import build_models
from cutespin.model.promela import lower

from . import fakes
from .inputs import HANDOFF, RACE
from .lspkit import open_text, server, wait_final
from .mutate import ROOT, assert_promela_is_generated_only

pytestmark = pytest.mark.usefixtures("require_spin")
SERVER = ROOT / "server" / "cutespin"

# Every way a Python file can make something happen when imported or run, each writing a marker.
EVIL = '''\
import os, sys, subprocess
open({m!r} + ".module", "w").write("imported")
os.system("touch " + {m!r} + ".system")
subprocess.run(["touch", {m!r} + ".subprocess"])
import evil_helper  # a sibling module with side effects of its own
from evil_helper import *
__import__("evil_helper")


def _decorate(f):
    open({m!r} + ".decorator", "w").write("ran")
    return f


class Meta(type):
    def __new__(mcls, *a):
        open({m!r} + ".metaclass", "w").write("ran")
        return super().__new__(mcls, *a)


class K(metaclass=Meta):
    open({m!r} + ".classbody", "w").write("ran")

    def __init__(self, x=open({m!r} + ".default", "w")):
        exec("open({m!r} + '.exec', 'w')")
        eval("open({m!r} + '.eval', 'w')")
        self.stages = 2

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        open({m!r} + ".host", "w").write("ran")
        self.kernel(mA).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @_decorate
    @cute.kernel
    def kernel(self, mA: cute.Tensor, t=__import__("os").system("touch " + {m!r} + ".param")):
        os.system("touch " + {m!r} + ".kernel")
        open({m!r} + ".kernelopen", "w").write("ran")
        warp = cute.arch.warp_idx()
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        sys.exit(7)
        os._exit(9)


if __name__ == "__main__":
    open({m!r} + ".main", "w").write("ran")
sys.exit(5)
'''
EVIL_HELPER = 'open({m!r} + ".helper", "w").write("imported")\nimport os\nos._exit(11)\n'


def write_evil(folder: Path) -> tuple:
    marker = str(folder / "marker")
    src = "import cutlass\nimport cutlass.cute as cute\n" + EVIL.format(m=marker)
    (folder / "evil.py").write_text(src)
    (folder / "evil_helper.py").write_text(EVIL_HELPER.format(m=marker))
    return folder / "evil.py", marker


def markers(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("marker"))


def test_the_cli_never_imports_or_runs_the_file(tmp_path):
    evil, _ = write_evil(tmp_path)
    # The file and its helper are importable: were anything imported, it would run.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(tmp_path)])}
    for fmt in ("text", "json", "sarif"):
        p = subprocess.run([sys.executable, "-m", "cutespin", "check", "--format", fmt, str(tmp_path)], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode in (0, 1, 2, 3), (p.returncode, p.stderr)  # not 5, 7, 9 or 11
        assert "Traceback" not in p.stderr
    assert markers(tmp_path) == []


def test_the_api_and_fixes_never_import_or_run_the_file(tmp_path, monkeypatch):
    evil, _ = write_evil(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = set(sys.modules)
    fr = api.check_source(evil.read_text(), str(evil), Settings())  # with fixes: patched copies re-checked
    assert fr.error is None and fr.kernels
    assert markers(tmp_path) == []
    assert not {m for m in set(sys.modules) - modules if "evil" in m}


async def test_the_editor_never_imports_or_runs_the_file(tmp_path):
    evil, _ = write_evil(tmp_path)
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(tmp_path)])}
    async with server(tmp_path, settings={"timeout": 10}, env=env) as client:
        uri = open_text(client, evil, evil.read_text())
        assert (await wait_final(client, uri)) is not None
        helper = open_text(client, tmp_path / "evil_helper.py", (tmp_path / "evil_helper.py").read_text())
        await wait_final(client, helper)
    assert markers(tmp_path) == []


def test_the_front_end_imports_nothing_that_runs_code():
    """Static: the product has no dynamic import, eval, exec, compile, runpy or pickle, and
    parses with libcst (and CPython's `ast.parse`, which only parses)."""
    bad = []
    for path in sorted(SERVER.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in ("eval", "exec", "compile", "__import__", "importlib.import_module", "runpy.run_path",
                            "runpy.run_module", "pickle.load", "pickle.loads", "marshal.loads", "imp.load_source",
                            "importlib.util.spec_from_file_location", "execfile"):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}()")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and
                                                        node.module else [])
                if any(n.split(".")[0] in ("importlib", "runpy", "pickle", "marshal", "imp") for n in names):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: import {names}")
    assert bad == []


def test_no_shell_anywhere():
    """No subprocess call with shell=True, no os.system / os.popen / os.exec*p / spawn*p /
    subprocess.getoutput, no `sh -c` in the product."""
    bad = []
    for path in sorted(SERVER.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}(shell=...)")
            if re.fullmatch(r"os\.(system|popen|exec\w*|spawn\w*|posix_spawnp?)|subprocess\.(getoutput|"
                            r"getstatusoutput)|commands\.\w+|pty\.spawn", name):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}()")
            if name.startswith("subprocess.") or name in ("Popen", "run"):
                first = node.args[0] if node.args else None
                if isinstance(first, (ast.Constant, ast.JoinedStr)):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}() with a command string")
        assert not re.search(r"['\"](?:/bin/)?(?:ba)?sh['\"]\s*,\s*['\"]-c['\"]", text), path
    assert bad == []


def test_every_tool_runs_in_its_own_process_group_without_a_shell():
    text = (SERVER / "engine" / "spin.py").read_text()
    popens = re.findall(r"subprocess\.Popen\((.*?)\)\n", text, re.S)
    assert popens and all("start_new_session=True" in p and "shell" not in p for p in popens)


# ------------------------------------------------------------------------------ Promela injection

HOSTILE = {
    # identifiers that mean something to SPIN or collide with the model's own names (locals,
    # parameters, the class and the kernel; never the DSL's own `cute.arch.warp_idx`)
    "ready": "end_ready", "sRow": "accept_row", "warp_idx": "progress_warp", "lane": "never",
    "bidx": "c_code", "smem": "mb_p", "ScaleHandoff": "init", "mX": "proctype", "mY": "_pid",
    "scale": "P0",
}
STRINGS = [
    '"c_code { abort(); }"', '"#include <stdlib.h>"', '"}"', "'*/ c_code { exit(1); } /*'",
    '"\\n#define assert(x) skip\\n"', '"accept: do :: skip od"',
]


def hostile_race() -> str:
    text = RACE
    for old, new in HOSTILE.items():
        text = re.sub(rf"(?<![.\w]){old}\b", new, text)
    text = text.replace("def kernel(", "def end_kernel(").replace("self.kernel(", "self.end_kernel(")
    extra = "".join(f"        s{i} = {s}  # c_code {{ exit(1); }} #include <x.h> }} end: accept:\n"
                    for i, s in enumerate(STRINGS))
    anchor = "        cute.arch.mbarrier_init_fence()\n"
    assert anchor in text
    return text.replace(anchor, extra + anchor, 1)


def test_hostile_names_strings_and_comments_never_reach_the_model():
    text = hostile_race()
    assert "end_ready" in text and "c_code" in text
    [k] = build_models(text, "hostile.py", Settings())
    pm = lower(k)
    assert_promela_is_generated_only(pm.text, text)
    for word in set(HOSTILE.values()) - {"init", "mb_p", "P0", "proctype"}:
        assert not re.search(rf"\b{word}\b", pm.text), word
    assert "c_code" not in pm.text and "#" not in pm.text and '"' not in pm.text


def test_hostile_names_do_not_change_the_verdict():
    """`end_ready` would make a stuck wait a valid end state if it reached the model; the race
    and its lines must be found exactly as with the plain names (and so must a deadlock)."""
    plain = api.check_source(RACE, "plain.py", Settings(), with_fixes=False)
    hostile = api.check_source(hostile_race(), "hostile.py", Settings(), with_fixes=False)
    [p], [h] = plain.kernels, hostile.kernels
    assert p.verdict == h.verdict == "counterexample"
    shift = len(STRINGS)  # the lines added above the findings
    assert [f.code for f in h.findings] == [f.code for f in p.findings] == ["CS201"]
    assert [f.span.line - shift for f in h.findings] == [f.span.line for f in p.findings]
    deadlock = HANDOFF.replace("cute.arch.mbarrier_wait(bar, 0)", "cute.arch.mbarrier_wait(bar, 1)")
    for old, new in (("bar", "end_bar"), ("warp", "end_warp"), ("buf", "progress_buf")):
        deadlock = re.sub(rf"\b{old}\b", new, deadlock)
    [kr] = api.check_source(deadlock, "dl.py", Settings(), with_fixes=False).kernels
    assert [f.code for f in kr.findings] == ["CS101"]


@pytest.mark.parametrize("value", ["True", "1.5", "'3'", "None", "(1, 2)", "2**31", "-2**31", "10**30"])
def test_only_validated_numbers_reach_the_model(value):
    """Counts, thread numbers and flag values of every kind: an int the model can hold, or no
    model at all (a finding or an inconclusive verdict), never the literal text."""
    texts = [
        HANDOFF.replace("mbarrier_init(bar, 1)", f"mbarrier_init(bar, {value})"),
        HANDOFF.replace("mbarrier_arrive(bar)", f"mbarrier_arrive(bar, arrive_count={value})"),
        HANDOFF.replace("mbarrier_wait(bar, 0)", f"mbarrier_wait(bar, {value})"),
        HANDOFF + f"        cute.arch.barrier(barrier_id=1, number_of_threads={value})\n",
        HANDOFF + f"        cute.arch.barrier(barrier_id={value}, number_of_threads=64)\n",
    ]
    for text in texts:
        fr = api.check_source(text, "k.py", Settings(timeout=10), with_fixes=False)
        assert fr.error is None, fr.error
        for kr in fr.kernels:
            if kr.promela is not None:
                assert_promela_is_generated_only(kr.promela.text, text)
                assert value not in kr.promela.text.split() or value.lstrip("-").isdigit()


def test_engine_temp_folders_are_private_and_removed(tmp_path, private_tmp, monkeypatch):
    monkeypatch.setattr(api, "CACHE", api._ResultCache(size=0))  # SPIN must really run
    record = tmp_path / "mode.txt"
    spin = tmp_path / "spin"
    spin.write_text(fakes.spin_recording_cwd_mode(str(record)))
    spin.chmod(0o755)
    engine._tools_cache.clear()
    try:
        fr = api.check_source(HANDOFF, "k.py", Settings(spin=str(spin), verify_fixes=False), with_fixes=False)
    finally:
        engine._tools_cache.clear()
    assert fr.kernels[0].run is not None
    assert record.read_text().strip() == "700"
    assert not [p for p in os.listdir(private_tmp) if p.startswith("cutespin-")]
