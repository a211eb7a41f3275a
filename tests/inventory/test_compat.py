"""nodegate resolves every inventory and --limit pattern exactly as ansible-core's own CLIs do.

Six inventories under data/ (precedence conflicts, INI, a directory with nested group_vars
folders, ranges and host:port, every connection alias and Jinja, IPv6), one of two sources
(data/multi/: ``ansible -i common -i site``, both orders, with DeepOps-like password logins over
Ansible's default ssh) and 57 patterns; the reference is ``ansible``/``ansible all --limit`` run as
subprocesses (compat.py). A host nodegate refuses on purpose (documented: nodegate/inventory.py)
must be refused, never resolved differently; a password login with ssh must get nodegate's
paramiko transport. Before this resolver, the hand-written one matched 2 of these 49 cases
(docs/inventory.md, "Compatibility").
"""

from __future__ import annotations

import shutil

import pytest

from . import compat

pytestmark = pytest.mark.skipif(shutil.which("ansible", path=str(compat.BIN)) is None,
                                reason="ansible-core's CLI is not in the venv: make venv")


@pytest.fixture(scope="module")
def resolve():
    compat.warm()
    return compat.in_subprocess()


def test_at_least_six_inventories_and_thirty_patterns():
    assert len({c.inventory for c in compat.CASES}) >= 6
    assert len(compat.CASES) >= 30


@pytest.mark.parametrize("case", compat.CASES, ids=[c.id for c in compat.CASES])
def test_same_hosts_order_and_connection_values_as_ansible(case, resolve):
    assert compat.compare(case, resolve) == []


def test_the_reference_really_resolved_connection_values():
    """The recorder plugins ran (no host is an error) and saw alias precedence at work."""
    conns = compat.ansible_connections(compat.P)
    assert all("error" not in v for v in conns.values())
    # the all group's alias beats rack1's group file (testbed-notes.md): Ansible's own rule
    assert conns["gpu002"]["user"] == "all_ssh_user"
    assert conns["gpu002"]["key_file"].endswith("/.ssh/all_alias_key")
    assert conns["login01"] == {"connection": "local"}


def test_order_that_ansible_itself_does_not_reproduce_is_detected():
    assert compat.order_is_reproducible(compat.P) is True
    assert compat.order_is_reproducible(compat.I) is False


def test_the_fork_server_answers_as_the_plain_cli():
    """ansible_forks.py (ansible-core imported once, a fork per command) says what the ``ansible``
    command itself says: a --limit host list and the resolved connection values, plain vs forked."""
    import json
    import tempfile

    inv = str(compat.DATA / compat.P)
    for argv in (["-i", inv, "all", "--limit", "site:!h200", "--list-hosts"],
                 ["-i", inv, "all", "-m", "raw", "-a", "true"]):
        got = []
        for plain in (True, False):
            with tempfile.TemporaryDirectory() as tree:
                r = compat._run([str(compat.BIN / "ansible"), *argv], compat._env(tree), plain=plain)
                files = {p.name: json.loads(p.read_text()) for p in sorted(compat.Path(tree).iterdir())}
            # ansible prints each host's ad-hoc result as its fork ends: the order is the machine's
            got.append((r.returncode, sorted(r.stdout.splitlines()), files))
        assert got[0] == got[1], argv
        assert got[0][0] == 0 and (got[0][2] or any("hosts (" in ln for ln in got[0][1]))
