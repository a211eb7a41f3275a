"""Synthetic suite: two checks over hand-built evidence (tests/reports/fleetgen.py)."""

import re

from nodegate import checks as ng_checks
from nodegate.checks import GpuSlot, check
from nodegate.collect import NodeFacts
from nodegate.errors import EvidenceError
from nodegate.facts import DriverBanner, GpuFacts
from nodegate.outcomes import Result

pytest_plugins = ["nodegate.plugins.nodegate_plugin", "nodegate.plugins.nodegate_reports"]


def _gpus(self):
    out = []
    for line in self.bundle.text("test.gpus").split("\n"):
        if not line.strip():
            continue
        idx, bus, serial, uuid, name, vbios, _status = line.split("\t")
        out.append(GpuFacts(index=int(idx), pci_bus_id=bus, serial=serial, uuid=uuid, name=name,
                            vbios_version=vbios, board_part_number="692-2G520-0200-000"))
    return out


def _banner(self):
    t = self.bundle.text("driver.proc_version")
    m = re.search(r"(Open Kernel Module|Kernel Module)\s+for\s+\S+\s+(\S+)|Kernel Module\s+(\S+)", t)
    flavor = "open" if "Open Kernel Module" in t else "proprietary"
    version = (m.group(2) or m.group(3)) if m else None
    return DriverBanner(flavor=flavor, version=version, raw=t)


# the synthetic bundles carry their own simple evidence keys; the real parsers are not needed
NodeFacts.gpus = property(_gpus)
NodeFacts.driver_banner = property(_banner)
NodeFacts.kernel_release = property(lambda self: self.bundle.text("meta.uname_r").strip())
NodeFacts.nvidia_module_version = property(lambda self: _banner(self).version)
ng_checks.CHECK_MODULES = ()   # only the synthetic checks below
ng_checks.gpu_slots = lambda facts, spec: [GpuSlot(g.index, g.pci_bus_id) for g in facts.gpus]


@check(id="SYN-DRV-001", name="driver_version", title="Driver version", scope="node",
       severity="major", evidence=("driver.proc_version",),
       remediation="Reboot into the installed driver 580.159.04.", rule="synthetic")
def _driver(facts, spec):
    b = facts.driver_banner
    if b.version == "580.159.04":
        return Result.passed("580.159.04", b.version)
    return Result.failed("580.159.04", str(b.version), f"driver {b.version} loaded",
                         evidence=b.raw.strip())


@check(id="SYN-GPU-001", name="gpu_health", title="GPU health", scope="gpu",
       severity="critical", evidence=("test.gpus",),
       remediation="Reseat the GPU or replace the riser; RMA if it recurs.", rule="synthetic")
def _health(facts, spec, gpu):
    for line in facts.bundle.text("test.gpus").split("\n"):
        f = line.split("\t")
        if len(f) == 7 and f[0] == str(gpu.index):
            name, status = f[4], f[6]
            if status == "ok":
                return Result.passed("healthy", "healthy")
            if status == "skip":
                return Result.skipped("spec health.required: false", "healthy", "unverified")
            if status == "error":
                raise EvidenceError("test.gpus", "health unreadable")
            return Result.failed("healthy", f"{status} on {name}",
                                 f"gpu{gpu.index} {name}: {status}",
                                 evidence=f"NVRM: Xid (PCI:{f[1]}): 79, {name} has fallen off the bus\n{line}")
    raise EvidenceError("test.gpus", f"gpu{gpu.index} not listed")
