"""Golden fixtures: tests/fixtures/<form>/<scenario>.txt parsed by PARSERS[<form>] equals
<scenario>.json ({"result": ...} or {"error": "ParseError"}). One generic test walks them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodegate.errors import ParseError
from nodegate.parsers import PARSERS, parse

from .jsonable import to_jsonable

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(FIXTURES.glob("*/*.txt"))

# Parsers of free text that by design never raise: their "broken" fixtures pin the degenerate
# result (None / every line kind "other") instead of ParseError.
NEVER_RAISE = {"smi_error", "kernel_log", "unit_text", "name_list", "fabricmanager_log"}


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_golden_fixture(path: Path):
    expected = json.loads(path.with_suffix(".json").read_text())
    text = path.read_text()
    if "error" in expected:
        with pytest.raises(ParseError):
            parse(path.parent.name, text)
    else:
        assert to_jsonable(parse(path.parent.name, text)) == expected["result"]


def test_every_fixture_dir_is_a_parser_form():
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} <= set(PARSERS)


@pytest.mark.parametrize("form", sorted({p.parent.name for p in CASES}))
def test_each_parser_has_healthy_and_broken_fixture(form: str):
    names = [p.stem for p in (FIXTURES / form).glob("*.txt")]
    healthy = [n for n in names if not n.startswith("broken")]
    broken = [n for n in names if n.startswith("broken")]
    assert len(healthy) >= 1 and len(broken) >= 1
    if form not in NEVER_RAISE:
        for n in broken:
            assert "error" in json.loads((FIXTURES / form / f"{n}.json").read_text()), n


def test_every_parser_form_has_fixtures():
    covered = {p.parent.name for p in CASES}
    assert set(PARSERS) - covered == set()
