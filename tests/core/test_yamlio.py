"""nodegate.yamlio: libyaml's safe loader where PyYAML has it, and still only safe types."""

from __future__ import annotations

import pytest
import yaml

from nodegate import yamlio
from nodegate.errors import SpecError
from nodegate.inventory import load_inventory


def test_uses_libyaml_when_pyyaml_has_it():
    assert yamlio.SAFE_LOADER is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)


def test_same_documents_as_the_pure_python_safe_loader():
    doc = "a: [1, 2.5, true, null, '0x10de']\nb: &x {k: v}\nc: *x\nd: 2026-11-29\n"
    assert yamlio.safe_load(doc) == yaml.load(doc, Loader=yaml.SafeLoader)


@pytest.mark.parametrize("doc", ["!!python/object/apply:os.system ['true']", "!!python/name:os.system"])
def test_python_tags_are_refused(doc):
    with pytest.raises(yaml.YAMLError):
        yamlio.safe_load(doc)


def test_inventory_with_a_python_tag_is_a_spec_error(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text("nodes:\n  n1: !!python/object/apply:os.system ['touch " + str(tmp_path / "pwned") + "']\n")
    # ansible-core reads inventories now; its YAML loader is a safe one as well
    with pytest.raises(SpecError, match="ansible-core refused it.*Could not determine a constructor"):
        load_inventory(str(inv))
    assert not (tmp_path / "pwned").exists()
