"""tests/captures/ is a byte-exact copy of ../shared/captures (what the tests read, so a clone
of the repository alone passes). Compared with ../shared when it is there."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2] / "shared" / "captures"
COPIES = sorted(p for p in HERE.iterdir() if p.is_dir() and not p.name.startswith("__"))


def test_the_repository_carries_the_h200_capture():
    assert [p.name for p in COPIES] == ["h200-vm-580.159.04"]
    assert (COPIES[0] / "smi_qx.out").stat().st_size > 10_000 and (COPIES[0] / "index.tsv").is_file()


@pytest.mark.parametrize("copy", COPIES, ids=[p.name for p in COPIES])
def test_copy_equals_shared(copy):
    src = SHARED / copy.name
    if not src.is_dir():
        pytest.skip(f"{src} absent (a clone without ../shared): nothing to compare the copy with")
    files = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    assert sorted(p.relative_to(copy) for p in copy.rglob("*") if p.is_file()) == files
    for f in files:
        assert (copy / f).read_bytes() == (src / f).read_bytes(), f
