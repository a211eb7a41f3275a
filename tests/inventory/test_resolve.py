"""nodegate.inventory on ansible-core: what a host resolves to, and every refusal (exit 2 at the
plugin) with the host and the value named. Moved from tests/core/test_inventory.py; the old
expectations that encoded the hand-written resolver changed: a host without ansible_connection
uses OpenSSH (``ssh://``) as Ansible does, where it used paramiko; groups are listed in Ansible's
order (depth, priority, name) instead of ancestors-first."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from nodegate.errors import SpecError
from nodegate.inventory import load_inventory, redact_url, select_names

ROOT = Path(__file__).resolve().parents[2]


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
    _write(tmp_path, "host_vars/gpu02.yaml", "nodegate: {pcie: {width: 8}}\nansible_password: s3cr3t\n"
                                             "ansible_connection: paramiko\n")
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
    assert g2.groups == ("all", "rack1", "h100")
    assert g2.spec_raw == {"driver": {"version": "570"}, "pcie": {"gen": 5, "width": 8}, "gpu": {"count": 8}}
    assert inv.hosts["gpu03"].spec_raw["driver"] == {"version": "580.159.04"}


def test_urls_use_testinfra_grammar_and_hide_passwords(inv):
    assert inv.hosts["gpu01"].url() == "ssh://ops@10.0.0.1:2222?ssh_identity_file=/keys/id_ed25519"
    assert inv.hosts["gpu02"].url() == "paramiko://ops:s3cr3t@10.0.0.2:2222"
    assert "s3cr3t" not in inv.hosts["gpu02"].redacted_url()
    assert "s3cr3t" not in repr(inv.hosts["gpu02"]) and "s3cr3t" not in str(inv.hosts["gpu02"].listing())
    assert inv.hosts["gpu03"].url() == "ssh://ops@[fe80::1]:2222"
    assert inv.hosts["login01"].url() == "local://"


@pytest.mark.parametrize("limit,expected", [
    ("gpu01", ["gpu01"]),
    ("h100", ["gpu01", "gpu02"]),
    # Ansible's order: groups breadth-first from all (rack2's host before h100's, one level down)
    ("rack*:!gpu02", ["gpu03", "gpu01"]),
    ("rack1:&h100:!gpu01", ["gpu02"]),
    ("gpu0[13]", []),                    # Ansible: a subscript ([13]) of "gpu0", no such group
    ("~gpu0[13]", ["gpu03", "gpu01"]),
    ("h100[1]", ["gpu02"]),
])
def test_limit_patterns_are_ansibles(inv, limit, expected):
    if not expected:
        with pytest.raises(SpecError, match="matches no host"):
            inv.select(limit)
    else:
        assert [h.name for h in inv.select(limit)] == expected


def test_limit_matching_nothing_names_the_pattern(inv):
    with pytest.raises(SpecError, match=r"--limit 'nope' matches no host in .*hosts.yaml"):
        inv.select("nope")


def test_limit_file_missing_is_ansibles_error(inv, tmp_path):
    with pytest.raises(SpecError, match=r"--limit '@.*missing.txt'.*"):
        inv.select(f"@{tmp_path / 'missing.txt'}")


@pytest.mark.parametrize("name,text,match", [
    ("list", "all: [1, 2]\n", "skipped part of it.*not a valid group definition"),
    ("typo", "all:\n  hostz: {a: }\n  hosts: {b: }\n", r"skipped part of it.*unexpected key \(hostz\)"),
    ("hosts_list", "all:\n  hosts: [a, 3]\n", "requires a dictionary"),
    ("bad_yaml", "all: {hosts: {a: {}}\n", "ansible-core refused it"),
    ("empty", "all: {hosts: {}}\n", "no hosts defined"),
    ("dup_host", "all:\n  hosts:\n    a: {ansible_port: 1}\n    a: {ansible_port: 2}\n", "[Dd]uplicate"),
    ("dup_var", "all:\n  hosts:\n    a:\n      ansible_port: 1\n      ansible_port: 2\n", "[Dd]uplicate"),
    ("dup_group", "all:\n  children:\n    g: {hosts: {a: }}\n    g: {hosts: {b: }}\n", "[Dd]uplicate"),
])
def test_inventories_ansible_refuses_are_errors_naming_the_file(tmp_path, name, text, match):
    p = _write(tmp_path, f"{name}.yaml", text)
    with pytest.raises(SpecError, match=match) as e:
        load_inventory(p)
    assert str(p) in str(e.value)


def test_duplicate_key_in_group_vars_is_an_error(tmp_path):
    _write(tmp_path, "group_vars/all.yml", "ansible_user: a\nansible_user: b\n")
    p = _write(tmp_path, "hosts.yml", "all: {hosts: {n1: }}\n")
    with pytest.raises(SpecError, match=r"(?i)duplicate.*ansible_user|ansible_user.*duplicate|group_vars"):
        load_inventory(p).host("n1")


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".", "n\x1b]52;c;x\x07", "a b"])
def test_host_names_unusable_as_bundle_directories_are_refused(tmp_path, name):
    import json
    p = _write(tmp_path, "hosts.json", json.dumps({"all": {"hosts": {name: {}}}}))
    p = p.rename(tmp_path / "hosts.yml")   # JSON is YAML: the yaml plugin reads it
    with pytest.raises(SpecError, match="not usable as a bundle directory name") as e:
        load_inventory(p).select(None)
    assert repr(name) in str(e.value)


@pytest.mark.parametrize("port", ["abc", "22x", "1.5", "99999", "0"])
def test_port_that_is_no_integer_is_refused_naming_host_and_value(tmp_path, port):
    p = _write(tmp_path, "hosts.ini", f"n1 ansible_host=10.0.0.1 ansible_port={port}\n")
    with pytest.raises(SpecError, match="host n1") as e:
        load_inventory(p).select(None)
    assert port in str(e.value)


@pytest.mark.parametrize("conn", ["winrm", "psrp", "community.docker.docker", "nosuchplugin"])
def test_connection_types_without_a_transport_are_refused(tmp_path, conn):
    p = _write(tmp_path, "hosts.yaml", f"all: {{hosts: {{n1: {{ansible_connection: {conn}}}}}}}\n")
    with pytest.raises(SpecError, match=rf"host n1: ansible_connection '{conn}'"):
        load_inventory(p).host("n1")


@pytest.mark.parametrize("var,value,match", [
    ("ansible_ssh_common_args", "-o ProxyJump=bastion", "ansible_ssh_common_args"),
    ("ansible_ssh_extra_args", "-vvv", "ansible_ssh_extra_args"),
    ("ansible_ssh_private_key", "inline", "ansible_ssh_private_key"),
    ("ansible_become_method", "su", "ansible_become_method 'su'"),
    ("ansible_become_user", "nvidia", "ansible_become_user 'nvidia'"),
])
def test_options_nodegate_cannot_honour_are_refused(tmp_path, var, value, match):
    extra = ", ansible_become: true" if var.startswith("ansible_become") else ""
    p = _write(tmp_path, "hosts.yaml", f"all: {{hosts: {{n1: {{{var}: '{value}'{extra}}}}}}}\n")
    with pytest.raises(SpecError, match=match) as e:
        load_inventory(p).host("n1")
    assert "host n1" in str(e.value)


def test_become_runs_the_probe_with_sudo(tmp_path):
    p = _write(tmp_path, "hosts.yaml", "all: {hosts: {n1: {ansible_become: 'yes', ansible_user: ops}}}\n")
    h = load_inventory(p).host("n1")
    assert (h.become, h.url()) == (True, "ssh://ops@n1?sudo=true")


def test_fqcn_and_smart_connections_map_to_the_transports(tmp_path):
    p = _write(tmp_path, "hosts.yaml", """
        all:
          hosts:
            a: {ansible_connection: ansible.builtin.ssh}
            b: {ansible_connection: ansible.builtin.paramiko_ssh}
            c: {ansible_connection: smart}
            d: {ansible_connection: ansible.builtin.local}
    """)
    inv = load_inventory(p)
    # smart: ansible-core's ConnectionFieldAttribute runs `ssh -o ControlPersist`; without the
    # OpenSSH client it picks paramiko (ansible/playbook/attribute.py)
    smart = "ssh" if shutil.which("ssh") else "paramiko"
    assert [inv.host(n).connection for n in "abcd"] == ["ssh", "paramiko", smart, "local"]


def test_jinja_in_vars_and_in_the_spec_is_templated(tmp_path):
    p = _write(tmp_path, "hosts.yaml", """
        all:
          vars: {site: dc1, drv: "580.159.04"}
          hosts:
            n1:
              ansible_host: "{{ inventory_hostname }}.{{ site }}.example"
              ansible_port: "{{ 2200 + 2 }}"
              nodegate: {driver: {version: "{{ drv }}"}, gpu: {count: "{{ 4 * 2 }}"}}
    """)
    h = load_inventory(p).host("n1")
    assert (h.address, h.port) == ("n1.dc1.example", 2202)
    assert h.spec_raw == {"driver": {"version": "580.159.04"}, "gpu": {"count": 8}}
    assert type(h.spec_raw["driver"]["version"]) is str and type(h.spec_raw["gpu"]["count"]) is int


def test_host_list_source_like_ansible_i_a_comma_list():
    inv = load_inventory("gpu01,gpu02:2222,")
    assert [(h.name, h.port) for h in inv.select(None)] == [("gpu01", None), ("gpu02", 2222)]


def test_select_names_for_replayed_bundles_uses_ansible_patterns():
    names = ["gpu001", "gpu002", "gpu010", "login01"]
    assert select_names("gpu00*:!gpu002", names) == ["gpu001"]
    assert select_names("~gpu0[01]0?", names) == ["gpu001", "gpu002", "gpu010"]
    assert select_names("login01,gpu010", names) == ["gpu010", "login01"]
    assert select_names(None, names) == names


@pytest.mark.parametrize("url,shown", [
    ("paramiko://ops:s3cr3t@10.0.0.2:2222", "paramiko://ops:***@10.0.0.2:2222"),
    ("ssh://ops:p%40ss@node:22?ssh_identity_file=/k", "ssh://ops:***@node:22?ssh_identity_file=/k"),
    ("paramiko://ops@10.0.0.1", "paramiko://ops@10.0.0.1"),
    ("local://", "local://"),
])
def test_redact_url_hides_passwords(url, shown):
    assert redact_url(url) == shown


def test_example_inventory_validates_and_merges():
    from nodegate.spec import load_spec
    inv = load_inventory(ROOT / "inventories" / "example" / "hosts.yaml")
    specs = {n: load_spec(h.spec_raw, n) for n, h in inv.hosts.items()}
    assert [h.name for h in inv.select("rack1")] == ["gpu001", "gpu002"]
    assert specs["gpu002"].pcie.gen == 4 and specs["gpu001"].pcie.gen is None
    assert (specs["gpu101"].driver.version, specs["gpu101"].driver.flavor) == ("550", "proprietary")
    assert specs["gpu001"].gpu.count == 8 and specs["gpu001"].driver.install == "dkms"


def test_a_password_with_the_ssh_connection_logs_in_through_paramiko(tmp_path):
    """Ansible logs in with ssh + sshpass here; nodegate's OpenSSH runs in batch mode (no
    password prompt), so the host gets the paramiko transport, the password never shown."""
    p = _write(tmp_path, "hosts.ini", "[gpu]\ng1 ansible_host=10.0.0.1\ng2 ansible_host=10.0.0.2 "
               "ansible_connection=local\n[all:vars]\nansible_user=vagrant\nansible_password=vagrant\n")
    h = load_inventory(p).host("g1")
    assert (h.connection, h.ansible_connection, h.password_login, h.user) == ("paramiko", "ssh", True, "vagrant")
    assert h.url() == "paramiko://vagrant:vagrant@10.0.0.1"
    assert h.redacted_url() == "paramiko://vagrant:***@10.0.0.1"
    assert "vagrant@" not in repr(h) and h.listing()["password_set"] is True
    assert h.listing()["connection"] == "paramiko" and h.listing()["ansible_connection"] == "ssh"
    assert load_inventory(p).host("g2").connection == "local"


def test_a_password_without_a_user_logs_in_as_the_local_user_as_openssh_does(tmp_path):
    import getpass
    p = _write(tmp_path, "hosts.yaml", "all: {hosts: {n1: {ansible_ssh_pass: pw}}}\n")
    assert load_inventory(p).host("n1").url() == f"paramiko://{getpass.getuser()}:pw@n1"


def test_several_sources_are_merged_by_ansible_core_in_the_order_given(tmp_path):
    a = _write(tmp_path, "common.ini", "[gpu]\ng1 ansible_host=10.0.0.1\ng2 ansible_host=10.0.0.2\n"
               "[gpu:vars]\nansible_port=2200\n")
    b = _write(tmp_path, "site/hosts.yml", "all: {children: {gpu: {hosts: {g2: {ansible_port: 2202}, g3: {}}}}}\n")
    inv = load_inventory([str(a), str(b)])
    assert inv.names == ["g1", "g2", "g3"] and inv.sources == (str(a), str(b))
    assert inv.source == f"{a} + {b}"
    assert [inv.host(n).port for n in inv.names] == [2200, 2202, 2200]
    assert inv.host("g3").sources == (str(a), str(b))
    assert [h.name for h in inv.select("gpu:!g1")] == ["g2", "g3"]
    with pytest.raises(SpecError, match="missing.yml: no such file or directory"):
        load_inventory([str(a), str(tmp_path / "missing.yml")])


def test_match_groups_is_ansible_cores_pattern_matching_on_names_and_groups():
    from nodegate.inventory import match_groups
    g = {"a": ["all", "slurm-cluster", "slurm-node"], "b": ["all", "slurm-node", "h200"], "c": ["all", "kube"]}
    assert match_groups(["slurm-node"], "abc", g) == ["a", "b"]
    assert match_groups(["slurm-cluster"], "abc", g) == ["a"]
    assert match_groups(["slurm-node:!h200", "c"], "abc", g) == ["a", "c"]
    assert match_groups(["all"], "cab", g) == ["c", "a", "b"]          # the run's order
    assert match_groups(["nope"], "abc", g) == []


def test_spec_origins_name_the_files_that_set_a_key(inv, tmp_path):
    """A spec error names the file (README "Inventory and spec"): the group_vars/host_vars files
    and inline vars that set the key, in Ansible's order (the last is the value kept)."""
    assert inv.spec_origins("gpu02", "pcie.width") == [str(tmp_path / "host_vars/gpu02.yaml")]
    assert inv.spec_origins("gpu02", "pcie.gen") == [str(tmp_path / "group_vars/all.yaml")]
    assert inv.spec_origins("gpu01", "gpu.count") == [str(tmp_path / "group_vars/h100/main.yml")]
    assert inv.spec_origins("gpu03", "driver.version") == [
        str(tmp_path / "group_vars/all.yaml"), f"{tmp_path / 'hosts.yaml'} (host gpu03's vars)"]
    assert inv.spec_origins("gpu01", "gpu.model") == []


def test_spec_error_from_group_vars_names_the_file(tmp_path):
    """An INI inventory outside the checkout with a bad value in group_vars/: exit-2 message
    names group_vars/h100.yaml, the key and the reason (found by a new user: it named hosts.ini)."""
    from types import SimpleNamespace

    from nodegate.session.jobs import build_jobs
    _write(tmp_path, "site/group_vars/h100.yaml", "nodegate:\n  gpu: {count: eight}\n")
    src = _write(tmp_path, "site/hosts.ini", "[h100]\ngpu001 ansible_host=10.0.0.1\n")
    config = SimpleNamespace(
        option=SimpleNamespace(inventory=[str(src)], limit=None, target=None, reports_dir=str(tmp_path / "r"),
                               bundles_dir=None),
        invocation_params=SimpleNamespace(dir=tmp_path), stash=pytest.Stash(),
        issue_config_time_warning=lambda *a, **k: None)
    with pytest.raises(SpecError) as e:
        build_jobs(config)
    msg = str(e.value)
    assert "nodegate.gpu.count: Input should be a valid integer" in msg
    assert msg.startswith(f"{tmp_path / 'site/group_vars/h100.yaml'} (nodegate: of host gpu001): ")

