"""Every sample is a test: its `# cutespin-expect:` lines must hold, and nothing else is reported."""
from pathlib import Path

import pytest

from cutespin import api
from cutespin.config import Settings, settings_for_path

from .conftest import SAMPLES
from .expect import parse_expectations

SAMPLE_FILES = sorted(SAMPLES.glob("*.py"))


def test_there_are_enough_samples():
    with_expect = [p for p in SAMPLE_FILES if parse_expectations(p.read_text())]
    assert len(with_expect) >= 12


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_expectations(path: Path, require_spin):
    text = path.read_text()
    expects = {e.kernel: e for e in parse_expectations(text)}
    assert expects, f"{path.name} has no cutespin-expect line"
    settings = settings_for_path(path, Settings()).with_overrides(verify_fixes=False)
    result = api.check_source(text, str(path), settings, with_fixes=False)
    assert result.error is None, result.error
    seen = set()
    for kr in result.kernels:
        assert kr.qualname in expects, f"{path.name}: kernel {kr.qualname} has no cutespin-expect line"
        e = expects[kr.qualname]
        seen.add(kr.qualname)
        detail = [f"{f.code} {f.kind} line {f.span.line}: {f.message}" for f in kr.findings]
        assert kr.verdict == e.verdict, f"{path.name}: {kr.qualname} is {kr.verdict} ({kr.reason}) {detail}"
        for f in kr.findings:
            assert f.kind in e.kinds, f"{path.name}: unexpected kind {f.kind}: {detail}"
            assert f.span.line in e.lines, f"{path.name}: finding anchored on line {f.span.line}: {detail}"
    assert seen == set(expects), f"{path.name}: expected kernels not found: {set(expects) - seen}"
