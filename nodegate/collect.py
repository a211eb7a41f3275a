"""NodeFacts: evidence (a Bundle) -> typed facts, lazily, one parser call per fact group.

Each property reads the bundle keys named in its docstring, calls the pure parser, caches the
result and raises ``EvidenceError(key, reason)`` when the evidence is missing, failed (tool
missing, timeout, non-zero exit where that means no data), truncated or unparsable. Checks
let that exception propagate; the check framework turns it into outcome ERROR.

Imports point one way: parsers never import this module.
"""

from __future__ import annotations

from functools import cached_property

from .bundle import Bundle
from .errors import EvidenceError, ParseError
from .facts import (DkmsStatus, DriverBanner, FirmwareFacts, GpuFacts, KernelEvent, LibNvml,
                    ModinfoFacts, ModuleState, PasswdEntry, PersistencedFacts, SmiError,
                    SmiVersion, SysfsLink, SystemdUnit, UnitFile)


class NodeFacts:
    """Facts of one node, derived from its bundle on first access.

    Attributes (each a cached property; see the docstring of each for its source):
    kernel_release, boot_id, modules, nvidia_module_version, modinfo_nvidia,
    modinfo_peermem, modinfo_nv_peer_mem, installed_kernels, modules_load_d, dkms,
    driver_banner, libnvml, smi_version, smi_error, gpus, gpu_source, persistenced_unit,
    persistenced_unit_files, persistenced, persistenced_user, firmware, pci_links,
    ib_devices, peermem_registered, kernel_events, kernel_log_source, fabricmanager_version,
    fabricmanager_unit, clocks_samples.
    """

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.node = bundle.node

    def _parse(self, key: str, parser, text: str):
        try:
            return parser(text)
        except ParseError as e:
            raise EvidenceError(key, f"output unparsable: {e}") from None

    # Implementations are filled in by the parser layer (see nodegate/parsers/*).
    @cached_property
    def kernel_release(self) -> str:
        """``meta.uname_r``: the booted kernel release, stripped."""
        raise NotImplementedError

    @cached_property
    def gpus(self) -> list[GpuFacts]:
        """GPU facts, in index order. Source order: ``nvml.json`` when usable, else
        ``smi.qx``. Raises EvidenceError naming the driver-stack error (``smi_error``) when
        nvidia-smi could not report (mismatch, no driver)."""
        raise NotImplementedError
