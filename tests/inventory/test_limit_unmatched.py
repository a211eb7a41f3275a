"""A ``--limit`` part that matches no host or group: ansible-core warns "Could not match supplied
host pattern, ignoring: rack9" and goes on with the rest; nodegate says the same on the terminal,
once, escaped, on a run with an inventory, a replay without one and ``--list-hosts``, and still
when ansible-core saw the same warning earlier in the process (its Display shows a warning once
a process: nodegate.ansible_core.captured gives every block its own)."""

from __future__ import annotations

import json

import pytest

from nodegate.inventory import load_inventory, select_names

from .test_cli_selection import NODEGATE, SAMPLES, run

NODE = "ecc-uncorrectable-volatile"
WARNING = "Could not match supplied host pattern, ignoring: rack9"


@pytest.fixture
def site(tmp_path):
    d = tmp_path / "site"
    d.mkdir()
    (d / "inv.yml").write_text(f"all:\n  children:\n    rack1:\n      hosts:\n        {NODE}:\n")
    return d


def test_ansible_core_warns_for_each_call_in_one_process(tmp_path):
    inv_file = tmp_path / "inv.yml"
    inv_file.write_text("all:\n  children:\n    rack1:\n      hosts:\n        gpu01:\n")
    for _ in range(2):
        inv = load_inventory(inv_file)
        assert inv.select_names("rack1,rack9") == ["gpu01"]
        assert [w for w in inv.warnings if "Could not match" in w] == [f"[WARNING]: {WARNING}"]
    for _ in range(2):
        warns: list[str] = []
        assert select_names("gpu01,rack9", ["gpu01", "gpu02"], warnings=warns) == ["gpu01"]
        assert warns == [f"[WARNING]: {WARNING}"]


def _said(r) -> int:
    return (r.stdout + r.stderr).count(WARNING)


def test_a_run_with_an_inventory_says_the_unmatched_part_once(site):
    r = run([str(NODEGATE), "--replay", str(SAMPLES), "--inventory", "inv.yml", "--limit", "rack1,rack9",
             "--collect-only", "-q", "-p", "no:cacheprovider"], site)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"suites/test_memory.py::test_ecc_counters[{NODE}]" in r.stdout
    assert _said(r) == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert "nodegate: --limit 'rack1,rack9': ansible-core: " + WARNING in r.stdout


def test_a_full_run_says_it_once_with_warnings_off(site):
    r = run([str(NODEGATE), "--replay", str(SAMPLES), "--inventory", "inv.yml", "--limit", "rack1,rack9",
             "-k", "test_ecc_counters", "-q", "--tb=no", "-p", "no:warnings", "--reports-dir", "out"], site)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert _said(r) == 1, r.stdout[-3000:] + r.stderr[-2000:]


def test_a_replay_without_inventory_says_it_once(site):
    r = run([str(NODEGATE), "--replay", str(SAMPLES), "--limit", f"{NODE},rack9", "--collect-only", "-q",
             "-p", "no:cacheprovider"], site)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert _said(r) == 1, r.stdout[-3000:] + r.stderr[-2000:]


@pytest.mark.parametrize("how,extra", [("text", ()), ("json", ()), ("json", ("-k", "test_ecc_counters"))],
                         ids=["text", "json", "json-narrowed"])
def test_list_hosts_says_it_once_on_stderr(site, how, extra):
    """--list-hosts lists after the session starts when -k narrows the nodes (preselect)."""
    r = run([str(NODEGATE), "--inventory", "inv.yml", "--limit", "rack1,rack9", f"--list-hosts={how}", *extra],
            site)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert WARNING not in r.stdout and r.stderr.count(WARNING) == 1, r.stderr
    if how == "json":
        assert [h["name"] for h in json.loads(r.stdout)] == [NODE]


def test_the_unmatched_part_is_escaped(site):
    r = run([str(NODEGATE), "--replay", str(SAMPLES), "--inventory", "inv.yml", "--limit", "rack1,r\x1b[31mack9",
             "--collect-only", "-q", "-p", "no:cacheprovider"], site)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    out = r.stdout + r.stderr
    assert "\x1b" not in out
    assert out.count("ignoring: r\\x1b[31mack9") == 1, out[-3000:]
