"""Parser for ``nvidia-smi -q`` text (full, ``-d`` filtered, ``-i`` single GPU, or an excerpt).

Usage::

    nvidia-smi -q                 # also -q -d PERFORMANCE,ECC,... and -q -i <n>

Each line is ``<indent><label> : <value>`` or a section label. Labels are padded to different
columns by branch (36, 44, 56; checks.md "Traps"): the line is split on the FIRST ``' : '``,
never on a column. Nesting follows indentation. Labels are translated to the XML element names
(nvsmi_device_v13.dtd) and the result goes through the same mapping as ``smi_xml`` so both
forms give equal GpuFacts. Old spellings are accepted: "Clocks Throttle Reasons" (pre-535),
"Ecc Mode", "Single Bit"/"Double Bit" section lines with trailing spaces,
"Remapped Rows : N/A" as a scalar.

A partial excerpt without the ``==NVSMI LOG==`` header and ``GPU <bus id>`` line (e.g. only
the "Clocks Throttle Reasons" block) becomes one GPU with ``pci_bus_id`` None.

Schema::

    SmiReport(driver_version, cuda_version, attached_gpus, gpus=[GpuFacts(source="smi_text")])

Example::

    GPU 00000000:00:06.0
        PCI
            GPU Link Info
                PCIe Generation
                    Max                 : 5
                    Host Max            : N/A
    -> GpuFacts(pci_bus_id="0000:00:06.0", link=PcieLink(max_gen=5, host_max_gen=NA))
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import SmiReport
from . import _values as V
from ._gputree import TNode, build_gpu
from ._limits import check_gpu_count

MAX_TEXT_CHARS = 32 * 1024 * 1024

_GPU_LINE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")

# Label translation (lower-cased label) valid under a given parent (XML name). "*" = anywhere.
_CONTEXT: dict[str, dict[str, str | tuple[str, ...]]] = {
    "*": {
        "serial number": "serial", "gpu uuid": "uuid", "gpu recovery action": "gpu_recovery_action",
        "ecc mode": "ecc_mode", "ecc errors": "ecc_errors", "mig mode": "mig_mode",
        "power readings": "power_readings",
    },
    "mig_mode": {"current": "current_mig", "pending": "pending_mig"},
    "fabric": {"cliqueid": "cliqueId", "clusteruuid": "clusterUuid"},
    "ecc_mode": {"current": "current_ecc", "pending": "pending_ecc"},
    "pci": {"bus id": "pci_bus_id", "device id": "pci_device_id", "gpu link info": "pci_gpu_link_info",
            "replays since reset": "replay_counter", "replay number rollovers": "replay_rollover_counter"},
    "inforom_version": {"image version": "img_version"},
    "pci_gpu_link_info": {"pcie generation": "pcie_gen", "link width": "link_widths"},
    "pcie_gen": {"max": "max_link_gen", "current": "current_link_gen",
                 "device current": "device_current_link_gen", "device max": "max_device_link_gen",
                 "host max": "max_host_link_gen"},
    "link_widths": {"max": "max_link_width", "current": "current_link_width"},
    "single_bit": {"texture shared": "texture_shm"},
    "double_bit": {"texture shared": "texture_shm"},
    "volatile": {"sram uncorrectable sec-ded": "sram_uncorrectable_secded"},
    "aggregate": {"sram uncorrectable sec-ded": "sram_uncorrectable_secded"},
    "retired_pages": {
        "single bit ecc": ("multiple_single_bit_retirement", "retired_count"),
        "double bit ecc": ("double_bit_retirement", "retired_count"),
        "pending page blacklist": "pending_blacklist",
        "pending page retirement": "pending_retirement",
    },
    "remapped_rows": {
        "correctable error": "remapped_row_corr", "inactive correctable error": "remapped_row_corr_inactive",
        "uncorrectable error": "remapped_row_unc", "inactive uncorrectable error": "remapped_row_unc_inactive",
        "pending": "remapped_row_pending", "remapping failure occurred": "remapped_row_failure",
        "bank remap availability histogram": "row_remapper_histogram",
    },
    "row_remapper_histogram": {k: f"row_remapper_histogram_{k}" for k in ("max", "high", "partial", "low", "none")},
    "temperature": {"gpu current temp": "gpu_temp", "memory current temp": "memory_temp"},
    "utilization": {"gpu": "gpu_util", "memory": "memory_util", "encoder": "encoder_util",
                    "decoder": "decoder_util"},
    "clocks": {"graphics": "graphics_clock", "sm": "sm_clock", "memory": "mem_clock", "video": "video_clock"},
    "max_clocks": {"graphics": "graphics_clock", "sm": "sm_clock", "memory": "mem_clock", "video": "video_clock"},
    "gpu_power_readings": {"instantaneous power draw": "instant_power_draw"},
    # 535+ "Clocks Event Reasons Counters" (microseconds since driver load): the -q labels differ
    # from the reason lines above ("SW Power Capping", "HW Power Braking"); XML names from v13's DTD
    "clocks_event_reasons_counters": {
        "sw power capping": "clocks_event_reasons_counters_sw_power_cap",
        "sync boost": "clocks_event_reasons_counters_sync_boost",
        "sw thermal slowdown": "clocks_event_reasons_counters_sw_therm_slowdown",
        "hw thermal slowdown": "clocks_event_reasons_counters_hw_therm_slowdown",
        "hw power braking": "clocks_event_reasons_counters_hw_power_brake",
    },
}

# "Clocks Event Reasons" / "Clocks Throttle Reasons" lines -> NVML reason names.
_REASONS = {
    "idle": "gpu_idle", "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap", "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown", "hw power brake slowdown": "hw_power_brake_slowdown",
    "sync boost": "sync_boost", "sw thermal slowdown": "sw_thermal_slowdown",
    "display clock setting": "display_clocks_setting", "display clocks setting": "display_clocks_setting",
}


def parse_smi_text(text: str | bytes) -> SmiReport:
    """Parse ``nvidia-smi -q`` text. Empty input -> empty SmiReport.

    Raises ParseError when non-empty text holds no ``label : value`` line at all, or a field
    nodegate reads holds a malformed value.
    """
    text = V.check_text(text, cap=MAX_TEXT_CHARS, what="nvidia-smi -q")
    lines = [ln.expandtabs(4).rstrip() for ln in text.splitlines()]
    if not any(ln.strip() for ln in lines):
        return SmiReport()
    rep = SmiReport()
    blocks = _split_gpus(lines, rep)
    if not blocks:
        body = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("==", "$", "#"))]
        if not any(" : " in ln or ln.endswith(" :") for ln in body):
            raise ParseError("nvidia-smi -q: no 'label : value' lines")
        if rep.driver_version is None or any(ln[:1] == " " for ln in body):
            blocks = [(None, body)]
    rep.gpus = [_sections_voided(build_gpu(_tree(bus, body), i, "smi_text"), bus, body)
                for i, (bus, body) in enumerate(blocks)]
    return rep


#: GpuFacts attribute -> the top-level ``nvidia-smi -q`` sections that hold it (any one of them)
_SECTION_OF: dict[str, tuple[str, ...]] = {
    "name": ("Product Name",), "serial": ("Serial Number",), "uuid": ("GPU UUID",),
    "persistence_mode": ("Persistence Mode",), "vbios_version": ("VBIOS Version",),
    "inforom_image": ("Inforom Version",), "mig_mode_current": ("MIG Mode",), "mig_mode_pending": ("MIG Mode",),
    "pci_device_id": ("PCI",), "link": ("PCI",), "pcie_replay_counter": ("PCI",),
    "pcie_replay_rollover": ("PCI",), "pstate": ("Performance State",),
    "clocks_event_reasons": ("Clocks Event Reasons", "Clocks Throttle Reasons"),
    "clocks_event_reasons_mask": ("Clocks Event Reasons", "Clocks Throttle Reasons"),
    "ecc_mode_current": ("ECC Mode",), "ecc_mode_pending": ("ECC Mode",),
    "ecc_volatile": ("ECC Errors",), "ecc_aggregate": ("ECC Errors",),
    "retired_pages": ("Retired Pages",), "remapped_rows": ("Remapped Rows",),
    "compute_mode": ("Compute Mode",), "gsp_firmware_version": ("GSP Firmware Version",),
    "power_limit_w": ("GPU Power Readings", "Power Readings"),
    "fabric_state": ("Fabric",), "fabric_status": ("Fabric",),
}


def _sections_voided(g, bus: str | None, body: list[str]):
    """``nvidia-smi -q -d <SECTIONS>`` prints only the sections asked for (issue 39.5): a block
    with a ``GPU <bus id>`` line but no "Product Name" line is such an output, and every attribute
    whose section is absent is a missing value with the reason "section not collected" (checks
    that read it ERROR saying so, never FAIL on "model None"). A full ``-q`` (it always prints
    the product name) and a headerless excerpt (no bus id line) are left as they are."""
    if bus is None:
        return g
    least = _min_indent(body)   # once: linear in the block
    top = {_split(ln)[0].lower() for ln in body if ln.strip() and _indent(ln) == least}
    if "product name" in top:
        return g
    shown = ", ".join(sorted(t for t in top if t)) or "none"
    for attr, sections in _SECTION_OF.items():
        if not any(sec.lower() in top for sec in sections) and attr not in g.field_errors:
            g.field_errors[attr] = (f"section not collected: this nvidia-smi -q output holds only some sections "
                                    f"({shown[:200]}); no '{sections[0]}' section")
    return g


def _indent(ln: str) -> int:
    return len(ln) - len(ln.lstrip(" "))


def _min_indent(body: list[str]) -> int:
    return min((_indent(ln) for ln in body if ln.strip()), default=0)


#: header label -> (SmiReport attribute, is the 610 label that replaces a deprecated one). 610 prints
#: ``Driver Version : 610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]``
#: then ``KMD Version : 610.57.04`` (and CUDA / CUDA UMD alike): the version is read without the
#: note, and the new label decides (utkuozdemir/nvidia_gpu_exporter's RTX 2080 SUPER 610.57.04 capture)
_VERSION_LABELS = {"driver version": ("driver_version", False), "kmd version": ("driver_version", True),
                   "cuda version": ("cuda_version", False), "cuda umd version": ("cuda_version", True)}


def _split_gpus(lines: list[str], rep: SmiReport) -> list[tuple[str | None, list[str]]]:
    """Header values into ``rep``; returns (bus id, lines) per ``GPU <bus id>`` block."""
    blocks: list[tuple[str | None, list[str]]] = []
    cur: list[str] | None = None
    decided: set[str] = set()      # versions a 610 label (KMD / CUDA UMD Version) has given
    for ln in lines:
        m = _GPU_LINE.match(ln)
        if m:
            cur = []
            blocks.append((m.group(1), cur))
            check_gpu_count(len(blocks), "nvidia-smi -q", running=True)   # refused before any GPU is built
            continue
        if cur is not None and (ln[:1] == " " or not ln.strip()):
            cur.append(ln)
            continue
        cur = None
        key, val = _split(ln)
        k = key.lower()
        if k in _VERSION_LABELS:
            attr, new_label = _VERSION_LABELS[k]
            v = V.version_label(val)
            if v is not None and (new_label or attr not in decided):
                setattr(rep, attr, v)
                if new_label:
                    decided.add(attr)
        elif k == "attached gpus":
            n = V.int_value(val, field="Attached GPUs")
            rep.attached_gpus = n if isinstance(n, int) else None
    return blocks


def _split(ln: str) -> tuple[str, str | None]:
    s = ln.strip()
    if " : " in s:
        k, v = s.split(" : ", 1)
        return k.strip(), v.strip()
    if s.endswith(" :") or s.endswith(":") and s.count(":") == 1:
        return s.rstrip(":").strip(), ""
    return s, None


def _tree(bus: str | None, body: list[str]) -> TNode:
    root = TNode("gpu", bus)
    stack: list[tuple[int, TNode]] = [(-1, root)]
    for ln in body:
        if not ln.strip():
            continue
        indent = len(ln) - len(ln.lstrip(" "))
        label, val = _split(ln)
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        node = _attach(parent, label, val)
        stack.append((indent, node))
    return root


def _attach(parent: TNode, label: str, val: str | None) -> TNode:
    """Add ``label`` under ``parent`` with its XML name; returns the node for children."""
    if parent.name in ("clocks_event_reasons", "clocks_throttle_reasons") or parent.name.startswith(
            ("clocks_event_reason_", "clocks_throttle_reason_")):
        return _attach_reason(parent, label, val)
    target = _translate(parent.name, label)
    if isinstance(target, tuple):
        holder = parent
        for name in target[:-1]:
            nxt = holder.child(name)
            if nxt is None:
                nxt = TNode(name)
                holder.children.append(nxt)
            holder = nxt
        node = TNode(target[-1], val)
        holder.children.append(node)
        return node
    node = TNode(target, val)
    parent.children.append(node)
    return node


def _attach_reason(parent: TNode, label: str, val: str | None) -> TNode:
    # Sub-reasons (HW Thermal/Power Brake under HW Slowdown) are flattened into the block:
    # each one is evaluated on its own (checks.md "Clocks event reasons").
    block = parent
    while block.parent is not None and block.name.startswith(("clocks_event_reason_", "clocks_throttle_reason_")):
        block = block.parent
    prefix = "clocks_event_reason_" if block.name == "clocks_event_reasons" else "clocks_throttle_reason_"
    name = _REASONS.get(label.lower(), _snake(label))
    node = TNode(prefix + name, val, parent=block)
    block.children.append(node)
    return node


def _translate(parent: str, label: str):
    k = label.lower()
    ctx = _CONTEXT.get(parent, {})
    if k in ctx:
        return ctx[k]
    if k in _CONTEXT["*"]:
        return _CONTEXT["*"][k]
    return _snake(label)


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
