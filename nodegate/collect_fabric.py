"""NodeFacts' fabric, InfiniBand, PCIe-error and uptime facts (issue 19), as a mixin of NodeFacts.

Same contract as nodegate/collect.py: each cached property reads the bundle keys its docstring
names, calls the pure parser and raises ``EvidenceError(key, reason)`` when the evidence is
missing, failed, truncated or unparsable.
"""

from __future__ import annotations

from .lazy import cached_property
from .errors import EvidenceError, NodegateError
from .facts import AerCounters, FmLogEvent, GpuNvLinks, IbPort, PciFunction
from .parsers import (fabricmanager_log, ib_ports, ibstat, nvlink_errors, nvlink_status, pci_aer,
                      pci_nvswitch, smi_error, uptime)


class FabricFacts:
    """Mixin: needs ``bundle``, ``_parse`` and ``_text`` (NodeFacts)."""

    # ------------------------------------------------------------------ fabric, InfiniBand, PCIe errors
    @cached_property
    def uptime_s(self) -> float:
        """``meta.uptime`` (/proc/uptime): seconds since boot."""
        v = self._parse("meta.uptime", uptime.parse_uptime, self._text("meta.uptime"))
        if v is None:
            raise EvidenceError("meta.uptime", "empty output")
        return v

    def _smi_item(self, key: str, parser):
        ev = self.bundle.get(key)
        if ev.status == "ok" and ev.rc not in (0, 124, 127):
            err = smi_error.parse_smi_error(ev.text + "\n" + ev.err_text)
            if err:
                raise EvidenceError(key, f"nvidia-smi failed ({err.kind}): {err.message}")
        return self._parse(key, parser, self._text(key))

    @cached_property
    def nvlink_status(self) -> list[GpuNvLinks]:
        """``smi.nvlink_status`` (nvidia-smi nvlink -s): per GPU, links and speeds (or the MIG
        refusal). EvidenceError naming nvidia-smi's error when it printed one instead."""
        return self._smi_item("smi.nvlink_status", nvlink_status.parse_nvlink_status)

    @cached_property
    def nvlink_errors(self) -> list[GpuNvLinks]:
        """``smi.nvlink_errors`` (nvidia-smi nvlink -e): per GPU and link, error counters."""
        return self._smi_item("smi.nvlink_errors", nvlink_errors.parse_nvlink_errors)

    @cached_property
    def nvml_nvlinks(self) -> list[GpuNvLinks] | None:
        """NVLink state, speed and error counters per GPU from ``nvml.json`` (nvmlDeviceGetNvLinkState,
        nvmlDeviceGetNvLinkErrorCounter, NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON), or None when the node
        has no usable NVML document or it carries no NVLink section (an older probe): then the
        nvidia-smi items are the source."""
        if not self.bundle.has("nvml.json"):
            return None
        ev = self.bundle.get("nvml.json")
        if ev.problem() or not ev.text.strip():
            return None
        from .nvml.mapping import nvlinks_from_nvml_json
        try:
            return nvlinks_from_nvml_json(ev.text)
        except (NodegateError, ValueError):
            return None

    @cached_property
    def nvswitches(self) -> list[PciFunction]:
        """``pci.nvswitch``: NVIDIA PCI functions of class 0x0680 (NVSwitches)."""
        return self._parse("pci.nvswitch", pci_nvswitch.parse_pci_nvswitch, self._text("pci.nvswitch"))

    @cached_property
    def pci_aer(self) -> list[AerCounters]:
        """``pci.aer``: AER counters of each GPU function and its upstream ports (files=0: none exposed)."""
        return self._parse("pci.aer", pci_aer.parse_pci_aer, self._text("pci.aer"))

    @cached_property
    def ib_ports(self) -> list[IbPort]:
        """``ib.ports``: every port under /sys/class/infiniband ([] when there is none)."""
        return self._parse("ib.ports", ib_ports.parse_ib_ports, self._text("ib.ports"))

    @cached_property
    def ibstat_ports(self) -> list[IbPort] | None:
        """``ib.ibstat`` (ibstat): the same ports as infiniband-diags reports them; None when ibstat is
        not installed (rc 127: sysfs is the evidence); EvidenceError when it ran and failed (a non-zero
        exit, or an ``ibpanic:``/``iberror:`` line), naming the tool's error and what its partial
        output showed."""
        ev = self.bundle.get("ib.ibstat")
        if ev.status == "ok" and ev.rc == 127:
            return None
        if ev.status == "ok":
            # ibstat that stopped part-way (libibmad IBPANIC: exit 255 after the CAs it had read,
            # corpus 116) is a failed run, never a short list of healthy ports
            fails = ibstat.ibstat_failures(ev.text + "\n" + ev.err_text)
            if ev.rc != 0 or fails:
                shown = ""
                try:
                    ports = ibstat.parse_ibstat(ev.text)
                    shown = f"; partial output before it stopped, not judged: {ibstat.describe_ports(ports)}" \
                        if ports else ""
                except NodegateError:
                    shown = "; partial output unparsable"
                why = fails[0] if fails else (ev.err_text.strip().splitlines() or [""])[0][:300]
                raise EvidenceError("ib.ibstat", f"ibstat failed (exit code {ev.rc}" + (f": {why}" if why else "")
                                    + f"){shown}")
        return self._parse("ib.ibstat", ibstat.parse_ibstat, self._text("ib.ibstat"))

    @cached_property
    def fabricmanager_log(self) -> list[FmLogEvent]:
        """``fabricmanager.log``: nvidia-fabricmanager's messages this boot (journal, else its log
        file); [] when fabric manager is not installed."""
        return self._parse("fabricmanager.log", fabricmanager_log.parse_fabricmanager_log,
                           self._text("fabricmanager.log"))
