"""Site check: the fabric manager unit is running, at the version of the loaded driver.

NVSwitch systems (HGX/DGX H100, H200, B200) need nvidia-fabricmanager running at exactly the
driver's version: a mismatch leaves the fabric uninitialised and CUDA jobs fail with
"system not yet initialized" (NVIDIA Fabric Manager User Guide, "Fabric Manager and driver
versions"). Through testinfra's ``host.service`` (systemctl is-active) and ``host.run``
(nv-fabricmanager --version); the driver version is nodegate's own fact (loaded module,
/sys/module/nvidia/version). Nodes without NVSwitches set ``site_vars: {fabric_manager: false}``.
"""

import re

import pytest

from nodegate.errors import EvidenceError

_VERSION = re.compile(r"version is\s*:\s*(\d+\.\d+(?:\.\d+)?)")


@pytest.mark.nodegate_check(id="SITE-FM-001", severity="critical",
                            remediation="Install nvidia-fabricmanager at the driver's exact version "
                                        "(same package branch), then systemctl enable --now nvidia-fabricmanager.")
def test_fabric_manager_active_at_driver_version(host, nodegate_node):
    """nvidia-fabricmanager running, at the loaded driver's version"""
    if nodegate_node.vars.get("fabric_manager", True) is False:
        pytest.skip("site_vars.fabric_manager is false: no NVSwitch on this node")
    fm = host.service("nvidia-fabricmanager")
    assert fm.is_running, "nvidia-fabricmanager.service is not active"
    out = host.run("nv-fabricmanager --version")
    m = _VERSION.search(out.stdout)
    if out.rc != 0 or m is None:   # no verdict without a version: ERROR (EvidenceError), not FAIL
        raise EvidenceError("site.nv-fabricmanager --version",
                            f"nv-fabricmanager --version gave no version (rc {out.rc}): {out.stdout[:200]!r}")
    driver = nodegate_node.facts.nvidia_module_version   # EvidenceError (ERROR) when not readable
    assert m.group(1) == driver, f"fabric manager {m.group(1)} != loaded driver {driver}"
