"""The committed sample bundles (inventories/samples/fleet) match the profiles.

- A fresh build (tools/build_samples.py; needs root + busybox + dash) equals the committed
  bundles byte for byte, meta.json time fields aside.
- expected.yaml equals the profiles' expectations, and the registered checks evaluated on the
  committed bundles give exactly those outcomes (no root needed).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodegate.bundle import Bundle
from tools.build_samples import DEFAULT_OUT, build, diff
from tools.fleet import Fleet, load_profiles
from tools.fleet.local import evaluate_bundle

from .conftest import needs_fleet

SAMPLES = DEFAULT_OUT


@pytest.fixture(scope="module")
def expected():
    return yaml.safe_load((SAMPLES / "expected.yaml").read_text())


def test_expected_yaml_is_the_profiles_expectations(expected):
    assert expected == Fleet(load_profiles().values()).expected()


def test_committed_bundles_cover_every_profile():
    assert sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()) == sorted(load_profiles())


def test_checks_on_committed_bundles_give_expected_outcomes(expected):
    profiles = load_profiles()
    got = {}
    for name, prof in sorted(profiles.items()):
        got.update(evaluate_bundle(Bundle.load(SAMPLES / name), prof.spec))
    wrong = {k: (expected.get(k), got.get(k)) for k in sorted(set(expected) | set(got)) if expected.get(k) != got.get(k)}
    assert wrong == {}, "test id: (expected, got)"


@needs_fleet
def test_fresh_build_equals_committed_samples(tmp_path: Path):
    build(tmp_path / "fresh")
    assert diff(SAMPLES, tmp_path / "fresh") == []
