"""The model size limits (model/promela.py). A model certainly over the line limit is refused
before anything is emitted (`_refuse_if_certainly_too_large`): the floor it computes never
exceeds the lines really emitted, and past the limit the refusal is the one emission would have
raised. A model over the statement limit is refused while it is built."""
import pytest

from cutespin.config import Settings
from cutespin.frontend import build_models
from cutespin.model import promela

from ..conftest import SAMPLES


def _floor_and_lines(k):
    """The floor the refusal check computed for `k`, and the lines `build` emitted."""
    seen = []
    low = promela.Lowering(k)
    real = low._refuse_if_certainly_too_large

    def capture(keys):
        seen.append(promela.line_floor(keys))
        return real(keys)

    low._refuse_if_certainly_too_large = capture
    text = low.build().text
    return (seen[0] if seen and seen[0] else None), len(text.splitlines())


def test_the_floor_never_exceeds_the_lines_emitted():
    checked = 0
    for path in sorted(SAMPLES.glob("*.py")):
        for k in build_models(path.read_text(), str(path), Settings()):
            if len(k.configs) <= 1:
                continue
            try:
                floor, lines = _floor_and_lines(k)
            except (promela.ModelTooLarge, promela.TooManyGroups, promela.ValueOutOfRange):
                continue
            if floor is None:
                continue
            assert 0 < floor <= lines, (path.name, floor, lines)
            checked += 1
    assert checked >= 10


def test_a_model_certainly_over_the_limit_is_refused_before_emitting(monkeypatch):
    path = SAMPLES / "pipeline_async_handles_race.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    floor, lines = _floor_and_lines(k)
    assert len(k.configs) > 1 and floor > 10
    monkeypatch.setattr(promela, "MAX_MODEL_LINES", floor - 1)
    low = promela.Lowering(k)
    with pytest.raises(promela.ModelTooLarge, match="more than"):
        low.build()
    # Refused by the floor, not by emission: only the declarations were emitted.
    assert len(low.lines) < floor - 1


def test_a_process_lowered_alike_in_every_group_counts_once():
    same, a, b = ("w", "a"), ("x",), ("y", "z", "z2")
    assert promela.line_floor([(same, a), (same, b)]) == 2 + 1 + 3
    assert promela.line_floor([(same,)]) == 2
    assert promela.line_floor([]) == 0


def test_a_model_over_the_statement_limit_is_refused_while_built(monkeypatch):
    path = SAMPLES / "dsmem_jacobi_scope.py"
    k = build_models(path.read_text(), str(path), Settings())[0]
    whole = promela.Lowering(k)
    whole.build()
    assert whole.statements > 100
    monkeypatch.setattr(promela, "MAX_MODEL_STATEMENTS", whole.statements // 2)
    cut = promela.Lowering(k)
    with pytest.raises(promela.ModelTooLarge, match=f"more than {whole.statements // 2} Promela statements"):
        cut.build()
    assert cut.statements <= whole.statements // 2 + max(cut.effect_sizes)
