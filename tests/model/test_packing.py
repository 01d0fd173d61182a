"""Packing op effects into d_steps that span several op lines (`Lowering.pack_effects`): the text
SPIN compiles, its budgets, and that verdicts and trail lines do not change."""
import re
from pathlib import Path

import pytest

from cutespin.config import Settings
from cutespin.engine.spin import check_model, find_tools
from cutespin.frontend import build_models
from cutespin.model import promela
from cutespin.model.promela import EFFECT, _blocking, lower

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _model(name: str):
    path = SAMPLES / name
    return lower(build_models(path.read_text(), str(path), Settings())[0])


def _blocks(text: str) -> list:
    """(first line, last line) of every d_step / atomic block that opens on an op line and
    closes on a later one."""
    out, start = [], None
    for i, line in enumerate(text.split("\n"), 1):
        body = line.strip()
        if start is None and re.match(r"(d_step|atomic) \{ .*;$", body):
            start = i
        elif start is not None and body.endswith(" }"):
            out.append((start, i))
            start = None
    return out


def test_blocking_statements_are_the_guards_of_waits():
    assert _blocking("(mb_ph[0] % 2 != 1)")
    assert _blocking("(ng[0] != sg)")
    assert _blocking("tq0 == 1")
    for stmt in ("assert(mb_in[0])", "mb_p[0] = mb_p[0] - 1", "a_3 = a_3 | 4", "skip",
                 "if :: (mb_p[0] == 0) -> mb_ph[0] = 1 :: else -> skip fi"):
        assert not _blocking(stmt), stmt


def test_consecutive_ops_share_a_d_step_and_only_its_first_statement_blocks():
    pm = _model("tma_ring_ok.py")
    assert EFFECT not in pm.text
    lines = pm.text.split("\n")
    blocks = _blocks(pm.text)
    assert blocks, "no d_step spans two op lines"
    for first, last in blocks:
        for n in range(first + 1, last + 1):
            # Each op keeps its own line (and line-table entry); none past the first one blocks.
            assert not _blocking(lines[n - 1].strip().rstrip(";").removesuffix(" }")), lines[n - 1]
    assert all(pm.lines.get(n) for first, last in blocks for n in range(first, last + 1))


def test_packing_keeps_line_numbers_and_every_op_line():
    path = SAMPLES / "tma_ring_ok.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    packed = lower(k)
    # The same model with one block per op line (what `bench/common.strip_atomic` undoes).
    saved = promela.MAX_DSTEP_STATEMENTS
    try:
        promela.MAX_DSTEP_STATEMENTS = 1
        unpacked = lower(k)
    finally:
        promela.MAX_DSTEP_STATEMENTS = saved
    assert packed.text.count("\n") == unpacked.text.count("\n")
    assert packed.lines == unpacked.lines
    assert not _blocks(unpacked.text)


@pytest.mark.parametrize("limits", [(0, 200), (1800, 3)], ids=["no d_steps left", "tiny d_steps"])
@pytest.mark.parametrize("sample,status", [("tma_ring_ok.py", "ok"), ("tma_ring_wrap_parity.py", "error")])
def test_verdicts_do_not_depend_on_the_d_step_budgets(require_spin, monkeypatch, limits, sample, status):
    """Past SPIN's d_step table the blocks are atomic, and an op above the size limit is split on
    its own line: the same verdict either way."""
    tools = find_tools()
    assert check_model(_model(sample).text, tools).status == status
    monkeypatch.setattr(promela, "MAX_DSTEPS", limits[0])
    monkeypatch.setattr(promela, "MAX_DSTEP_STATEMENTS", limits[1])
    text = _model(sample).text
    if limits[0] == 0:
        assert "d_step" not in text
    else:
        assert any(line.count("d_step {") > 1 for line in text.split("\n"))  # an op split on its line
    assert check_model(text, tools).status == status
