"""Ansible-format inventories: groups, vars precedence, group_vars/host_vars, --limit, errors."""

from __future__ import annotations

import textwrap

import pytest

from nodegate.errors import SpecError
from nodegate.inventory import load_inventory


def _write(tmp_path, rel, text):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(text))
    return p


@pytest.fixture
def inv(tmp_path):
    _write(tmp_path, "group_vars/all.yaml", """
        ansible_user: ops
        nodegate: {driver: {version: "570"}, pcie: {gen: 5}}
    """)
    _write(tmp_path, "group_vars/h100/main.yml", "nodegate: {gpu: {count: 8}}\n")
    _write(tmp_path, "host_vars/gpu02.yaml", "nodegate: {pcie: {width: 8}}\nansible_password: s3cr3t\n")
    return load_inventory(_write(tmp_path, "hosts.yaml", """
        all:
          vars: {ansible_port: 2222}
          hosts:
            login01: {ansible_connection: local}
          children:
            rack1:
              children:
                h100:
                  hosts:
                    gpu01: {ansible_host: 10.0.0.1, ansible_ssh_private_key_file: /keys/id_ed25519}
                    gpu02: {ansible_host: 10.0.0.2}
            rack2:
              hosts:
                gpu03: {ansible_host: "fe80::1", nodegate: {driver: {version: "580.159.04"}}}
    """))


def test_vars_merge_by_precedence_and_nodegate_is_deep_merged(inv):
    g2 = inv.hosts["gpu02"]
    assert g2.groups == ["all", "rack1", "h100"]
    assert g2.spec_raw == {"driver": {"version": "570"}, "pcie": {"gen": 5, "width": 8}, "gpu": {"count": 8}}
    assert inv.hosts["gpu03"].spec_raw["driver"] == {"version": "580.159.04"}


def test_urls_use_testinfra_grammar_and_hide_passwords(inv):
    assert inv.hosts["gpu01"].url() == "paramiko://ops@10.0.0.1:2222?ssh_identity_file=/keys/id_ed25519"
    assert inv.hosts["gpu02"].url() == "paramiko://ops:s3cr3t@10.0.0.2:2222"
    assert "s3cr3t" not in inv.hosts["gpu02"].redacted_url()
    assert inv.hosts["gpu03"].url() == "paramiko://ops@[fe80::1]:2222"
    assert inv.hosts["login01"].url() == "local://"


@pytest.mark.parametrize("limit,expected", [
    ("gpu01", ["gpu01"]),
    ("h100", ["gpu01", "gpu02"]),
    ("rack*:!gpu02", ["gpu01", "gpu03"]),
    ("rack1,&h100,!gpu01", ["gpu02"]),
    ("gpu0[13]", ["gpu01", "gpu03"]),
])
def test_limit_patterns_follow_ansible(inv, limit, expected):
    assert [h.name for h in inv.select(limit)] == expected


def test_limit_matching_nothing_is_an_error(inv):
    with pytest.raises(SpecError, match="matches no host"):
        inv.select("nope")


@pytest.mark.parametrize("text,match", [
    ("all: [1, 2]\n", "expected a mapping"),
    ("all:\n  hostz: {a: {}}\n", r"unknown key\(s\) \['hostz'\]"),
    ("all:\n  hosts: {a: 3}\n", r"all.hosts.a: expected a mapping"),
    ("all: {hosts: {}}\n", "no hosts defined"),
    ("all: {hosts: {a: {}}\n", "not valid YAML"),
])
def test_structural_errors_name_file_and_key(tmp_path, text, match):
    p = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(SpecError, match=match) as e:
        load_inventory(p)
    assert str(p) in str(e.value)


@pytest.mark.parametrize("url,shown", [
    ("paramiko://ops:s3cr3t@10.0.0.2:2222", "paramiko://ops:***@10.0.0.2:2222"),
    ("ssh://ops:p%40ss@node:22?ssh_identity_file=/k", "ssh://ops:***@node:22?ssh_identity_file=/k"),
    ("paramiko://ops@10.0.0.1", "paramiko://ops@10.0.0.1"),
    ("local://", "local://"),
])
def test_redact_url_hides_passwords(url, shown):
    from nodegate.inventory import redact_url
    assert redact_url(url) == shown


def test_unsupported_connection_names_the_inventory_file(tmp_path):
    p = _write(tmp_path, "hosts.yaml", "all: {hosts: {n1: {ansible_connection: winrm}}}\n")
    with pytest.raises(SpecError, match=r"hosts.yaml: host n1: ansible_connection 'winrm' not supported"):
        load_inventory(p).hosts["n1"].url()


def test_example_inventory_validates_and_merges():
    from pathlib import Path

    from nodegate.spec import load_spec
    inv = load_inventory(Path(__file__).resolve().parents[2] / "inventories" / "example" / "hosts.yaml")
    specs = {n: load_spec(h.spec_raw, n) for n, h in inv.hosts.items()}
    assert [h.name for h in inv.select("rack1")] == ["gpu001", "gpu002"]
    assert specs["gpu002"].pcie.gen == 4 and specs["gpu001"].pcie.gen is None
    assert (specs["gpu101"].driver.version, specs["gpu101"].driver.flavor) == ("550", "proprietary")
    assert specs["gpu001"].gpu.count == 8 and specs["gpu001"].driver.install == "dkms"
