"""Issue 37.9 (b): credentials written into an inventory address or host name are never echoed.

``ansible_host: user:secret@host`` (refused: nodegate connects to addresses only) was echoed whole
in the exit-2 message. Every inventory/spec error message now has ``user:password@`` redacted
(nodegate.errors.SpecError), and the run writes nothing (exit 2) so no report can hold it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nodegate.errors import InventoryError, SpecError, redact_userinfo

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2-Zq9"


@pytest.mark.parametrize("hosts", [
    {"n1": {"ansible_host": f"root:{SECRET}@127.0.0.9"}},
    {"n1": {"ansible_host": f"ssh://root:{SECRET}@127.0.0.9:22"}},
    {f"admin:{SECRET}@10.1.1.1": {}},
], ids=["ansible_host", "ansible_host-url", "host-name"])
def test_a_password_in_an_inventory_address_is_never_echoed(tmp_path, hosts):
    inv = tmp_path / "inv.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    for extra in ([], ["--list-hosts"]):
        r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--inventory", str(inv), "--reports-dir",
                            str(tmp_path / "r"), "-q", "-p", "no:cacheprovider", *extra], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stdout + r.stderr
        assert SECRET not in r.stdout + r.stderr
        assert ":***@" in r.stdout + r.stderr
    assert not (tmp_path / "r").exists() or SECRET not in "".join(
        p.read_text(errors="replace") for p in (tmp_path / "r").rglob("*") if p.is_file())


def test_redaction_keeps_the_user_and_the_host():
    assert redact_userinfo("ansible_host 'root:pw@10.0.0.1' is not") == "ansible_host 'root:***@10.0.0.1' is not"
    assert redact_userinfo("paramiko://u:p@h:22") == "paramiko://u:***@h:22"
    assert redact_userinfo("user@host and fe80::1%eth0") == "user@host and fe80::1%eth0"
    assert str(InventoryError("host 'a:b@c'")) == "host 'a:***@c'"
    assert str(SpecError("x")) == "x"
