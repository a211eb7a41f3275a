"""--spec FILE: the spec file forms, its errors, and the spec-origin summary lines."""

from __future__ import annotations

import pytest

from nodegate.errors import SpecError
from nodegate import specsource as specfile


@pytest.mark.parametrize("text,want", [
    ("gpu: {count: 8, model: H200}\n", {"gpu": {"count": 8, "model": "H200"}}),
    ("ansible_user: ops\nnodegate:\n  gpu: {count: 8}\n", {"gpu": {"count": 8}}),   # a group_vars file
    ("", {}),
], ids=["bare", "vars_file", "empty"])
def test_spec_file_forms(tmp_path, text, want):
    p = tmp_path / "spec.yml"
    p.write_text(text)
    assert specfile.load_file(p) == want


@pytest.mark.parametrize("text,msg", [
    ("- a\n- b\n", "expected a mapping (the nodegate: spec), got list"),
    ("nodegate: [1]\n", "nodegate: expected a mapping, got list"),
    ("gpu: {count: -1}\n", "nodegate.gpu.count"),
    ("gpu: {cuont: 8}\n", "nodegate.gpu.cuont: unknown key"),
    ("gpu: {count: 8\n", "not valid YAML"),
], ids=["list", "nodegate_list", "bad_value", "typo", "yaml"])
def test_bad_spec_files_are_spec_errors_naming_the_file(tmp_path, text, msg):
    p = tmp_path / "spec.yml"
    p.write_text(text)
    with pytest.raises(SpecError, match=f"--spec {p}") as e:
        specfile.load_file(p)
    assert msg in str(e.value)


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError, match="cannot read"):
        specfile.load_file(tmp_path / "nope.yml")


def test_summary_lines_group_nodes_by_origin():
    src = {"a": "inventory inv.yml", "b": "inventory inv.yml", "c": specfile.BUNDLE}
    assert specfile.summary(src, ["a", "b", "c"]) == ["inventory inv.yml: 2 node(s) (a, b)",
                                                      "bundle meta.json: 1 node(s) (c)"]
    assert specfile.summary({"a": "x", "b": "x"}) == ["x: 2 node(s)"]
    assert specfile.from_bundle(src) == ["c"]
