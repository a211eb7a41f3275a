"""``--list-hosts`` is a faithful dry run, and a spec error names the file that holds the bad
value (issue 30, items 5 and 7).

- ``--list-hosts -k gpu002`` lists gpu002 alone (the run contacts only the nodes with a
  selected item: the run's own preselect collection decides), ``-m``/``-k`` that deselect a
  node's every item leave it out, a selection of nothing is exit 2 with the run's message;
- ``--list-hosts`` validates every node's spec as the run does: exit 2, the same message;
- a bad ``nodegate.pcie.gen`` in ``group_vars/h100.yml`` (or host_vars/, or the inventory's own
  variables) is reported with that file and the key, not "merged from hosts.ini".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodegate.errors import SpecError
from nodegate.inventory import load_inventory
from nodegate.specorigin import locate_spec_error, spec_fragments
from nodegate.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
PRECEDENCE = ROOT / "tests" / "inventory" / "data" / "precedence" / "hosts.yml"
NODEGATE = Path(sys.executable).parent / "nodegate"


def nodegate(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([str(NODEGATE), *argv, "-p", "no:cacheprovider"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def listed(r: subprocess.CompletedProcess) -> list[str]:
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return [h["name"] for h in json.loads(r.stdout)]   # stdout is the JSON alone (| jq)


def test_list_hosts_with_k_lists_the_one_node_the_run_contacts(tmp_path):
    assert listed(nodegate(["--inventory", str(PRECEDENCE), "--list-hosts=json", "-k", "gpu002"], tmp_path)) == \
        ["gpu002"]
    every = listed(nodegate(["--inventory", str(PRECEDENCE), "--list-hosts=json"], tmp_path))
    assert "gpu002" in every and len(every) > 1
    assert not (tmp_path / "reports").exists()   # a dry run writes nothing


def test_list_hosts_with_nothing_selected_is_exit_2_as_the_run(tmp_path):
    argv = ["--inventory", str(PRECEDENCE), "-k", "no_such_check_or_node"]
    dry = nodegate([*argv, "--list-hosts"], tmp_path)
    run = nodegate([*argv, "--collect-only", "-q"], tmp_path)
    assert dry.returncode == run.returncode == 2, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert "no nodegate check selected" in dry.stdout + dry.stderr
    assert not (tmp_path / "reports").exists()


@pytest.fixture
def h100_site(tmp_path):
    """An INI inventory whose group_vars/h100.yml holds a bad nodegate.pcie.gen."""
    d = tmp_path / "site"
    (d / "group_vars").mkdir(parents=True)
    (d / "host_vars").mkdir()
    (d / "hosts.ini").write_text("[h100]\ngpu001 ansible_host=10.0.0.1\ngpu002 ansible_host=10.0.0.2\n")
    (d / "group_vars" / "all.yml").write_text("nodegate:\n  driver: {version: \"580.159.04\"}\n")
    (d / "group_vars" / "h100.yml").write_text("nodegate:\n  gpu: {count: 8}\n  pcie: {gen: \"five\"}\n")
    return d


def test_list_hosts_validates_the_spec_as_the_run_does(h100_site, tmp_path):
    inv = str(h100_site / "hosts.ini")
    dry = nodegate(["--inventory", inv, "--list-hosts"], tmp_path)
    run = nodegate(["--inventory", inv, "-q"], tmp_path)
    assert dry.returncode == run.returncode == 2
    msg = [ln for ln in dry.stderr.splitlines() if "spec error" in ln]
    assert msg and msg[0] in run.stderr
    assert not (tmp_path / "reports").exists()


def test_a_bad_group_vars_value_names_its_file_and_key(h100_site, tmp_path):
    r = nodegate(["--inventory", str(h100_site / "hosts.ini"), "--list-hosts"], tmp_path)
    assert r.returncode == 2
    line = next(ln for ln in r.stderr.splitlines() if "spec error" in ln)
    assert str(h100_site / "group_vars" / "h100.yml") in line and "nodegate.pcie.gen" in line, line
    assert "merged from" not in line


def test_the_highest_precedence_file_is_named(h100_site):
    (h100_site / "host_vars" / "gpu002.yml").write_text("nodegate:\n  pcie: {gen: \"six\"}\n")
    (h100_site / "group_vars" / "h100.yml").write_text("nodegate:\n  gpu: {count: 8}\n  pcie: {gen: 5}\n")
    inv = load_inventory(h100_site / "hosts.ini")
    srcs = [Path(s).name for s, _ in spec_fragments(inv, "gpu002")]
    assert srcs == ["gpu002.yml", "h100.yml", "all.yml"]   # host_vars, the group, all
    merged = inv.host("gpu002").spec_raw
    with pytest.raises(SpecError) as e:
        load_spec(merged, "merged")
    why = locate_spec_error(inv, "gpu002", load_spec, str(e.value).removeprefix("merged: "))
    assert why is not None and "host_vars" in why and "gpu002.yml" in why and "nodegate.pcie.gen" in why
    assert locate_spec_error(inv, "gpu001", load_spec, "nodegate.pcie.gen: whatever") is None


def test_a_bad_value_in_the_inventory_itself_names_the_inventory(tmp_path):
    d = tmp_path / "inline"
    d.mkdir()
    (d / "hosts.yml").write_text("all:\n  hosts:\n    gpu001: {ansible_host: 10.0.0.1}\n  children:\n    h100:\n"
                                 "      hosts: {gpu001: }\n      vars:\n        nodegate: {pcie: {gen: \"x\"}}\n")
    (d / "group_vars").mkdir()
    (d / "group_vars" / "all.yml").write_text("nodegate:\n  gpu: {count: 8}\n")
    r = nodegate(["--inventory", str(d / "hosts.yml"), "--list-hosts"], tmp_path)
    assert r.returncode == 2
    line = next(ln for ln in r.stderr.splitlines() if "spec error" in ln)
    assert f"{d / 'hosts.yml'} (nodegate: of host gpu001)" in line and "nodegate.pcie.gen" in line, line
