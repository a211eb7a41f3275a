"""A bad inventory or spec stops the run at start-up with exit code 2 and a message naming the
file and the key; no node is contacted (zero exec channels on the fleet's sshd)."""

from __future__ import annotations

import pytest
import yaml

from tests.hostile import harness as H
from tests.hostile.conftest import needs_fleet
from tools.fleet import Fleet

pytestmark = needs_fleet


@pytest.fixture(scope="module")
def fleet():
    f = Fleet()
    f.add("h200-vm-sim", "n1")
    f.add("h200-vm-sim", "n2")
    with f:
        yield f


def _inv(fleet, mutate) -> dict:
    inv = fleet.inventory()
    mutate(inv)
    return inv


CASES = {
    # name: (inventory text or mutation, phrases the message must contain)
    # ansible-core reads the inventory (nodegate/inventory.py): its messages
    "yaml-syntax": ("all:\n  hosts:\n    n1: {ansible_host: [unclosed\n", ["ansible-core refused it", "YAML"]),
    "unknown-group-key": (lambda inv: inv["all"].update(hostz={"n1": {}}),
                          ["skipped part of it", "unexpected key (hostz) in group (all)"]),
    "bad-spec-value": (lambda inv: inv["all"]["hosts"]["n2"].update(nodegate={"pcie": {"idle": "sometimes"}}),
                       ["(nodegate: of host n2)", "nodegate.pcie.idle"]),   # the file that holds it (issue 30)
    "unknown-spec-key": (lambda inv: inv["all"].update(vars={"nodegate": {"ecc": {"thresholdz": 1}}}),
                         ["nodegate.ecc.thresholdz", "unknown key"]),
    "bad-connection": (lambda inv: inv["all"]["hosts"]["n1"].update(ansible_connection="winrm"),
                       ["host n1", "ansible_connection 'winrm' is not supported"]),
    # ansible-core 2.19 refuses a list of hosts ("requires a dictionary")
    "hosts-not-mapping": (lambda inv: inv["all"].update(hosts=["n1", 3]), ["requires a dictionary"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_inventory_exits_2_naming_file_and_key_and_contacts_nothing(fleet, tmp_path, case):
    spec, phrases = CASES[case]
    inv_path = tmp_path / "inventory.yml"
    if isinstance(spec, str):
        inv_path.write_text(spec)
    else:
        inv_path.write_text(yaml.safe_dump(_inv(fleet, spec), sort_keys=False))
    before = fleet.exec_counts()
    run = H.run_suite(tmp_path / "reports", inventory=inv_path, known_hosts=fleet.known_hosts_path, timeout=120)
    if phrases is None:
        # hosts given as a list is accepted (Ansible allows it): nothing to refuse, but the
        # integer host name must not crash the run either
        assert run.rc in (0, 1), run.err[-2000:]
        return
    assert run.rc == 2, (run.rc, run.out[-1500:], run.err[-1500:])
    text = run.out + run.err
    assert "nodegate: spec error:" in text or "nodegate: inventory error:" in text
    assert str(inv_path) in text
    for ph in phrases:
        assert ph in text, (ph, text[-1500:])
    assert "Traceback" not in text
    assert fleet.exec_counts() == before
    assert not (tmp_path / "reports" / "bundles").exists() or not any((tmp_path / "reports" / "bundles").iterdir())
