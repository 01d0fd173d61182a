"""Access bits over several words: a region whose agents need more than 30 bits keeps them in
`a_5`, `a_5w1`, ... (`model/promela.py`, `wkey`). Every sample must give the same verdicts and
finding lines when a word holds only a few bits, so that nearly every region spans words."""
from pathlib import Path

import pytest

from cutespin import api
from cutespin.config import Settings, settings_for_path
from cutespin.frontend import build_models
from cutespin.model import promela
from cutespin.model.promela import lower, split_words, wkey, word_part

from ..expect import parse_expectations
from ..robustness.mutate import assert_promela_is_generated_only

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.py"))


def test_masks_split_into_words_of_thirty_bits():
    assert split_words(0) == []
    assert split_words(0b101) == [(0, 0b101)]
    assert split_words((1 << 31) | 1) == [(0, 1), (1, 2)]
    assert split_words(1 << 65) == [(2, 1 << 5)]
    assert word_part((1 << 31) | 1, 1) == 2
    assert wkey(5, 0) == "5" and wkey("5p1", 2) == "5p1w2"


def _results(path: Path):
    settings = settings_for_path(path, Settings()).with_overrides(verify_fixes=False)
    fr = api.check_source(path.read_text(), str(path), settings, with_fixes=False)
    assert fr.error is None, fr.error
    return [(kr.qualname, kr.verdict, [(f.code, f.span.line) for f in kr.findings]) for kr in fr.kernels]


def _tiny_words(monkeypatch):
    """Words of three bits: a region of two agents (read and write bits) already spans two."""
    monkeypatch.setattr(promela, "MAX_BITS", 3)
    monkeypatch.setattr(promela, "WORD_MASK", 0b111)
    monkeypatch.setattr(promela, "MAX_WORDS", 64)


def test_a_region_spans_words_when_its_agents_need_more_bits(monkeypatch):
    _tiny_words(monkeypatch)
    path = next(p for p in SAMPLES if p.name == "dsmem_jacobi_ok.py")
    text = lower(build_models(path.read_text(), str(path), Settings())[0]).text
    assert any(f"unsigned a_{r}w1 : 3;" in text for r in range(64))
    assert_promela_is_generated_only(text)  # the word names are generated ones too


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_agree_with_words_of_three_bits(path, require_spin, monkeypatch):
    if not parse_expectations(path.read_text()):
        pytest.skip("no cutespin-expect line")
    expected = _results(path)
    _tiny_words(monkeypatch)
    assert _results(path) == expected


def test_too_many_bits_for_every_word_is_reported(monkeypatch):
    monkeypatch.setattr(promela, "MAX_BITS", 1)
    monkeypatch.setattr(promela, "WORD_MASK", 1)
    monkeypatch.setattr(promela, "MAX_WORDS", 1)
    path = next(p for p in SAMPLES if p.name == "tma_ring_ok.py")
    with pytest.raises(promela.TooManyGroups, match="at most 1 are modeled"):
        lower(build_models(path.read_text(), str(path), Settings())[0])
