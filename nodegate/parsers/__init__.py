"""Parsers: pure functions from one evidence form (command output) to facts (nodegate.facts).

One module per form; each module docstring names the command it reads ("Usage"), the shape it
returns ("Schema") and an example. Every parser raises only ``ParseError`` on bad input
(property-tested) and returns an empty result for empty input where that makes sense.

Dispatch by form name::

    parse("smi_xml", text)            -> SmiReport
    FORM_BY_KEY["smi.qx"] == "smi_xml"
    guess_form(text)                  -> form name for unlabelled text (corpus, pasted output)

Corpus helpers (for tests of every layer)::

    parse_corpus_file(path) -> (header: dict, body: str)     # body byte-exact after the '---' line
    corpus_sections(path)   -> [Section(command, form, text)]  # body split at shell-prompt lines
"""

from __future__ import annotations

from typing import Callable

from ..errors import ParseError
from .corpus import corpus_sections, parse_corpus_file  # noqa: F401  (re-exported)
from .forms import guess_form  # noqa: F401  (re-exported)
from . import (perf_dcgmi, perf_dcgmproftester, perf_gpu_burn, perf_ib_write_bw, perf_json, perf_nccl,
               perf_nvbandwidth, perf_perftest)
from . import ib_guids, ib_write_lat, ibdiagnet, iblinkinfo, ibnetdiscover, nccl_json  # issue 38: cross-node
from . import (dkms, dmi, fabricmanager_log, firmware, ib_ports, ibstat, kernel_log, libnvml, lspci, modinfo,
               modules, nvlink_errors, nvlink_status, pci, pci_aer, pci_nvswitch, persistenced,
               proc_version, smi_csv, smi_error, smi_list, smi_summary, smi_text, smi_version,
               smi_xml, sysfs_lists, systemd, uptime)

#: form name -> parser (text -> facts).
PARSERS: dict[str, Callable] = {
    "smi_xml": smi_xml.parse_smi_xml,
    "smi_text": smi_text.parse_smi_text,
    "smi_csv": smi_csv.parse_query_gpu,
    "clocks_samples": smi_csv.parse_clocks_samples,
    "smi_error": smi_error.parse_smi_error,
    "smi_version": smi_version.parse_smi_version,
    "dkms": dkms.parse_dkms_status,
    "modinfo": modinfo.parse_modinfo,
    "proc_version": proc_version.parse_proc_version,
    "proc_modules": modules.parse_proc_modules,
    "lsmod": modules.parse_lsmod,
    "sys_modules": modules.parse_sys_modules,
    "systemctl_show": systemd.parse_systemctl_show,
    "systemctl_status": systemd.parse_systemctl_status,
    "unit_text": lambda t: systemd.parse_unit_text("<text>", t if isinstance(t, str) else t.decode("utf-8", "replace")),
    "unit_files": systemd.parse_unit_files,
    "persistenced_process": persistenced.parse_persistenced_process,
    "passwd": persistenced.parse_passwd,
    "lspci": lspci.parse_lspci_vvv,
    "pci_sysfs": pci.parse_pci_sysfs,
    "sysfs_tail": pci.parse_sysfs_tail,
    "firmware_gsp": firmware.parse_firmware_gsp,
    "libnvml": libnvml.parse_libnvml,
    "kernel_log": kernel_log.parse_kernel_log,
    "kernels_installed": sysfs_lists.parse_kernels_installed,
    "modules_load_d": sysfs_lists.parse_modules_load_d,
    "name_list": sysfs_lists.parse_name_list,
    "peermem_registration": sysfs_lists.parse_peermem_registration,
    "gpus_information": sysfs_lists.parse_gpus_information,
    "fabricmanager_version": sysfs_lists.parse_fabricmanager_version,
    # issue 19: NVLink, fabric, InfiniBand, PCIe errors
    "nvlink_status": nvlink_status.parse_nvlink_status,
    "nvlink_errors": nvlink_errors.parse_nvlink_errors,
    "pci_nvswitch": pci_nvswitch.parse_pci_nvswitch,
    "pci_aer": pci_aer.parse_pci_aer,
    "ib_ports": ib_ports.parse_ib_ports,
    "ibstat": ibstat.parse_ibstat,
    "fabricmanager_log": fabricmanager_log.parse_fabricmanager_log,
    "uptime": uptime.parse_uptime,
    "smi_summary": smi_summary.parse_smi_summary,
    "smi_list": smi_list.parse_smi_list,
    "dmi": dmi.parse_dmi,
    # issue 29: performance tools (bundle keys perf.*; nodegate.perf.extract maps them to the model)
    "perf_nccl": perf_nccl.parse_nccl,
    "perf_nvbandwidth": perf_nvbandwidth.parse_nvbandwidth,
    "perf_dcgmi": perf_dcgmi.parse_dcgmi,
    "perf_gpu_burn": perf_gpu_burn.parse_gpu_burn,
    "perf_ib_write_bw": perf_ib_write_bw.parse_ib_write_bw,
    "perf_json": perf_json.parse_perf_json,
    "perf_perftest": perf_perftest.parse_perftest,
    "perf_dcgmproftester": perf_dcgmproftester.parse_dcgmproftester,
    # issue 38: cross-node (nodegate/crossnode)
    "ib_guids": ib_guids.parse_ib_guids,
    "iblinkinfo": iblinkinfo.parse_iblinkinfo,
    "ibnetdiscover": ibnetdiscover.parse_ibnetdiscover,
    "ibdiagnet": ibdiagnet.parse_ibdiagnet,
    "ib_write_lat": ib_write_lat.parse_ib_write_lat,
    "nccl_json": nccl_json.parse_nccl_json,
}

#: bundle evidence key (nodegate.probe.ITEMS) -> form.
FORM_BY_KEY: dict[str, str] = {
    "modules.proc": "proc_modules", "modules.sys": "sys_modules", "modules.load_d": "modules_load_d",
    "kernels.installed": "kernels_installed", "driver.proc_version": "proc_version",
    "driver.gpus_information": "gpus_information", "driver.libnvml": "libnvml",
    "dev.nvidia": "name_list", "pci.sysfs": "pci_sysfs", "ib.devices": "name_list",
    "peermem.registration": "peermem_registration", "firmware.gsp": "firmware_gsp",
    "persistenced.process": "persistenced_process", "persistenced.passwd": "passwd",
    "persistenced.unit_files": "unit_files", "modinfo.nvidia": "modinfo",
    "modinfo.nvidia_peermem": "modinfo", "modinfo.nv_peer_mem": "modinfo",
    "systemd.persistenced_show": "systemctl_show", "systemd.fabricmanager_show": "systemctl_show",
    "fabricmanager.version": "fabricmanager_version", "dkms.status": "dkms",
    "smi.version": "smi_version", "smi.qx": "smi_xml", "smi.clocks_samples": "clocks_samples",
    "kernel.log": "kernel_log",
    "meta.uptime": "uptime", "smi.nvlink_status": "nvlink_status", "smi.nvlink_errors": "nvlink_errors",
    "pci.nvswitch": "pci_nvswitch", "pci.aer": "pci_aer", "ib.ports": "ib_ports", "ib.ibstat": "ibstat",
    "fabricmanager.log": "fabricmanager_log", "dmi.id": "dmi",
    "perf.nccl": "perf_nccl", "perf.nvbandwidth": "perf_nvbandwidth", "perf.dcgmi": "perf_dcgmi",
    "perf.gpu_burn": "perf_gpu_burn", "perf.ib_write_bw": "perf_ib_write_bw", "perf.builtin": "perf_json",
    "perf.command": "perf_json", "perf.ib_read_bw": "perf_perftest", "perf.ib_send_bw": "perf_perftest",
    "perf.ib_write_lat": "perf_perftest", "perf.ib_read_lat": "perf_perftest", "perf.ib_send_lat": "perf_perftest",
    "perf.dcgmproftester": "perf_dcgmproftester",
    "ib.guids": "ib_guids", "ib.iblinkinfo": "iblinkinfo",
}


def parse(form: str, text: str | bytes):
    """Run the parser of ``form``. KeyError for an unknown form; ParseError for bad text."""
    return PARSERS[form](text)


__all__ = ["PARSERS", "FORM_BY_KEY", "parse", "guess_form", "parse_corpus_file", "corpus_sections",
           "ParseError"]
