"""Site checks: kernel settings GPU jobs rely on, through testinfra's sysctl and mount_point.

- ``vm.max_map_count``: large-model frameworks map many regions (the kernel default 65530 is too
  low for some loaders; distributions for AI clusters raise it): at least
  ``site_vars.min_max_map_count`` (default 262144).
- ``/dev/shm`` mounted as tmpfs (NCCL's shared-memory transport and PyTorch DataLoader workers
  use it; NCCL troubleshooting, "Shared memory").
"""

import pytest


@pytest.mark.nodegate_check(id="SITE-SYSCTL-001", severity="minor",
                            remediation="Set vm.max_map_count in /etc/sysctl.d/ (e.g. 99-gpu.conf) and run sysctl --system.")
def test_vm_max_map_count(host, nodegate_node):
    """vm.max_map_count at least site_vars.min_max_map_count"""
    want = int(nodegate_node.vars.get("min_max_map_count", 262144))
    got = host.sysctl("vm.max_map_count")
    assert got >= want, f"vm.max_map_count {got} < {want}"


@pytest.mark.nodegate_check(id="SITE-MOUNT-001", severity="major",
                            remediation="Mount /dev/shm as tmpfs (systemd dev-shm.mount, or an /etc/fstab entry).")
def test_dev_shm_is_tmpfs(host):
    """/dev/shm mounted, tmpfs"""
    shm = host.mount_point("/dev/shm")
    assert shm.exists, "/dev/shm is not a mount point"
    assert shm.filesystem == "tmpfs", f"/dev/shm is {shm.filesystem}, not tmpfs"
