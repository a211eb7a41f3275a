"""One GPU record as a tree named like nvidia-smi's XML, and the one mapping tree -> GpuFacts.

Both ``nvidia-smi -q -x`` (smi_xml) and ``nvidia-smi -q`` text (smi_text) are turned into this
tree (text labels are translated to the XML element names of nvsmi_device_v13.dtd), so the two
forms of the same node give the same ``GpuFacts`` by construction.

Layouts are selected by element presence, never by DTD version (checks.md "ECC and memory
health": v12 exists with both throttle and event names):
- clocks reasons: ``clocks_event_reasons`` (535+) or ``clocks_throttle_reasons`` (older);
- ECC counters: ``single_bit``/``double_bit`` blocks (old), ``sram_*``/``dram_*`` (418-535),
  ``sram_uncorrectable_parity``/``sram_uncorrectable_secded`` (570+), plus the 580+
  ``sram_threshold_exceeded``, ``aggregate_uncorrectable_sram_sources``,
  ``channel_repair_pending``, ``tpc_repair_pending``, ``unrepairable_memory``;
- ``remapped_rows`` as a block, or the scalar ``N/A`` (pre-Ampere, MIG) -> NA;
- MIG instances' ``mig_devices/mig_device/ecc_error_count/volatile_count`` summed into
  ``mig_ecc_volatile`` (the GPU-level volatile counters read N/A while MIG is on).

A malformed value voids only the attribute that needs it (``GpuFacts.field_errors``), never the
whole GPU or report.
"""

from __future__ import annotations

from ..errors import ParseError
from ..facts import (CLOCKS_EVENT_BITS, NA, EccCounters, GpuFacts, PcieLink, RemappedRows,
                     RetiredPages)
from . import _values as V


class TNode:
    """A named value with ordered children (a text section can have both, e.g. HW Slowdown).

    A slotted class, not a dataclass: the controller builds ~500 of them per GPU of every node
    (nvidia-smi -q -x), and the dataclass ``__init__`` with a ``default_factory`` was a fifth of
    the XML parse (docs/performance.md). Equality compares name, value and children."""

    __slots__ = ("name", "value", "children", "parent")

    def __init__(self, name: str, value: str | None = None, children: list["TNode"] | None = None,
                 parent: "TNode | None" = None):
        self.name = name
        self.value = value
        self.children: list[TNode] = [] if children is None else children
        self.parent = parent

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TNode):
            return NotImplemented
        return (self.name, self.value, self.children) == (other.name, other.value, other.children)

    __hash__ = None  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return f"TNode(name={self.name!r}, value={self.value!r}, children={self.children!r})"

    def child(self, name: str) -> "TNode | None":
        for c in self.children:
            if c.name == name:
                return c
        return None

    def only(self, name: str) -> "TNode | None":
        """The child named ``name``, None when absent; ParseError when there are two or more: a
        field named twice is contradictory evidence, never "the first (or last) one wins" (the
        GpuFacts attribute that reads it ERRORs, ``build_gpu``)."""
        found = None
        for c in self.children:
            if c.name == name:
                if found is not None:
                    raise ParseError(f"{self.name}: {name} given more than once (contradictory)")
                found = c
        return found

    def get(self, *path: str) -> str | None:
        """Text value at ``path`` (None when any step is absent; ParseError when a step is named
        twice, see ``only``)."""
        node: TNode | None = self
        for p in path:
            node = node.only(p) if node else None
        if node is None:
            return None
        return node.value if node.value is not None else ("" if not node.children else None)

    def at(self, *path: str) -> "TNode | None":
        """The node at ``path`` (None when a step is absent; ParseError when one is named twice)."""
        node: TNode | None = self
        for p in path:
            node = node.only(p) if node else None
        return node


_REASON_PREFIXES = ("clocks_event_reason_", "clocks_throttle_reason_")


def build_gpu(g: TNode, index: int, source: str) -> GpuFacts:
    """GpuFacts from one ``<gpu>`` tree.

    A malformed value (ParseError from _values) voids only the GpuFacts attribute that needs it:
    the attribute keeps its default and ``field_errors[attribute]`` says why, so the checks that
    read it ERROR and the others still judge (a masked ``pci_device_id`` must not hide an intact
    ``product_name``). Attributes of one block share a fate: one bad link value voids ``link``."""
    gf = GpuFacts(index=index, source=source)
    for attr, fn in _FIELDS:
        try:
            setattr(gf, attr, fn(g))
        except ParseError as e:
            gf.field_errors[attr] = str(e)
    return gf


def _bus(g: TNode):
    bus = g.get("pci", "pci_bus_id") or g.value
    return V.bus_id(bus) if bus else None


def _errs_block(g: TNode, name: str):
    _once(g, "ecc_errors")
    errs = g.at("ecc_errors")
    if errs is not None:
        _once(errs, name)
    return _ecc(errs.at(name)) if errs is not None else EccCounters()


def _once(node: TNode, name: str) -> None:
    """Two ``name`` elements in one ``node`` (a second, zeroed ECC block before the real one):
    contradictory evidence, never "the first one wins" (ParseError: the facts that need it ERROR)."""
    if sum(1 for c in node.children if c.name == name) > 1:
        raise ParseError(f"{node.name}: {name} given more than once (contradictory)")


def _count(raw, field: str):
    """An error counter: a non-negative integer (NA/None as int_value gives them)."""
    v = V.int_value(raw, field=field)
    if isinstance(v, int) and v < 0:
        raise ParseError(f"{field}: negative error count {v}")
    return v


def _ecc_aggregate(g: TNode) -> EccCounters:
    ec = _errs_block(g, "aggregate")
    src = g.at("ecc_errors", "aggregate_uncorrectable_sram_sources")
    if src is not None:   # 580+: where the uncorrectable SRAM errors happened
        for c in src.children:
            key = f"aggregate_uncorrectable_sram_sources.{c.name}"
            ec.by_location[key] = V.int_value(c.value, field=key)
    return ec


def _threshold(g: TNode):
    agg = g.at("ecc_errors", "aggregate")
    if agg is not None and agg.at("sram_threshold_exceeded") is not None:
        return V.bool_value(agg.get("sram_threshold_exceeded"), field="sram_threshold_exceeded")
    return None


def _flag(name: str):
    def read(g: TNode):
        errs = g.at("ecc_errors")
        if errs is None or errs.at(name) is None:
            return None
        return V.bool_value(errs.get(name), field=name)
    return read


def _mig_ecc(g: TNode) -> EccCounters | None:
    """Sum of every ``<mig_device>``'s ``ecc_error_count/volatile_count`` (MIG on: the GPU-level
    volatile counters read N/A and each instance carries its own; nvsmi_device_v12+.dtd). None
    when no instance reports a count."""
    devs = g.at("mig_devices")
    blocks = [d.at("ecc_error_count", "volatile_count") for d in (devs.children if devs else [])
              if d.name == "mig_device"]
    blocks = [b for b in blocks if b is not None and b.children]
    if not blocks:
        return None
    total = EccCounters()
    for b in blocks:
        one = _ecc(b)
        for k, v in one.by_location.items():
            cur = total.by_location.get(k)
            if isinstance(v, int):
                total.by_location[k] = (cur if isinstance(cur, int) else 0) + v
            elif cur is None:
                total.by_location[k] = v   # N/A on every instance so far
    bl = total.by_location
    total.correctable_total = _sum(bl, ("sram_correctable", "dram_correctable"))
    total.uncorrectable_total = _sum(bl, ("sram_uncorrectable", "sram_uncorrectable_parity",
                                          "sram_uncorrectable_secded", "dram_uncorrectable"))
    return total


# GpuFacts attribute -> reader of the <gpu> tree (nvsmi_device_v13.dtd element names)
_FIELDS = (
    ("pci_bus_id", _bus),
    ("name", lambda g: _str(g.get("product_name"))),
    ("serial", lambda g: V.text_value(g.get("serial"))),
    ("uuid", lambda g: _str(g.get("uuid"))),
    ("vbios_version", lambda g: V.text_value(g.get("vbios_version"))),
    ("board_part_number", lambda g: V.text_value(g.get("board_part_number"))),
    ("pci_device_id", lambda g: V.device_id_from_pci(g.get("pci", "pci_device_id"))),
    ("architecture", lambda g: _str(g.get("product_architecture"))),
    ("persistence_mode", lambda g: V.bool_value(g.get("persistence_mode"), field="persistence_mode")),
    ("pstate", lambda g: _str(g.get("performance_state"))),
    ("link", lambda g: _link(g)),
    ("clocks_event_reasons", lambda g: _reasons(g)),
    ("clocks_event_reasons_counters", lambda g: _reason_counters(g)),
    ("ecc_mode_current", lambda g: V.bool_value(g.get("ecc_mode", "current_ecc"), field="current_ecc")),
    ("ecc_mode_pending", lambda g: V.bool_value(g.get("ecc_mode", "pending_ecc"), field="pending_ecc")),
    ("ecc_volatile", lambda g: _errs_block(g, "volatile")),
    ("ecc_aggregate", _ecc_aggregate),
    ("sram_threshold_exceeded", _threshold),
    ("channel_repair_pending", _flag("channel_repair_pending")),
    ("tpc_repair_pending", _flag("tpc_repair_pending")),
    ("unrepairable_memory", _flag("unrepairable_memory")),
    ("mig_ecc_volatile", _mig_ecc),
    ("remapped_rows", lambda g: _remapped(g.at("remapped_rows"))),
    ("retired_pages", lambda g: _retired(g.at("retired_pages"))),
    ("gsp_firmware_version", lambda g: V.text_value(g.get("gsp_firmware_version"))),
    ("recovery_action", lambda g: V.text_value(g.get("gpu_recovery_action"))),
    ("mig_mode_current", lambda g: V.bool_value(g.get("mig_mode", "current_mig"), field="current_mig")),
    ("temperature_c", lambda g: V.int_value(g.get("temperature", "gpu_temp"), field="gpu_temp")),
    ("power_draw_w", lambda g: _power(g)),
    ("utilization_gpu", lambda g: V.int_value(g.get("utilization", "gpu_util"), field="gpu_util")),
    ("graphics_clock_mhz", lambda g: V.int_value(g.get("clocks", "graphics_clock"), field="graphics_clock")),
    ("max_graphics_clock_mhz", lambda g: V.int_value(g.get("max_clocks", "graphics_clock"),
                                                     field="max_clocks/graphics_clock")),
    # issue 19: MIG pending, InfoROM image, compute mode, power limits, PCIe replay counters, fabric
    # state/status/health (Hopper and later; N/A elsewhere)
    ("mig_mode_pending", lambda g: V.bool_value(g.get("mig_mode", "pending_mig"), field="pending_mig")),
    ("inforom_image", lambda g: V.text_value(g.get("inforom_version", "img_version"))),
    ("compute_mode", lambda g: V.text_value(g.get("compute_mode"))),
    ("power_limit_w", lambda g: _power_limits(g)[0]),
    ("power_limit_default_w", lambda g: _power_limits(g)[1]),
    ("pcie_replay_counter", lambda g: V.int_value(g.get("pci", "replay_counter"), field="replay_counter")),
    ("pcie_replay_rollover", lambda g: V.int_value(g.get("pci", "replay_rollover_counter"),
                                                   field="replay_rollover_counter")),
    ("fabric_state", lambda g: V.text_value(g.get("fabric", "state"))),
    ("fabric_status", lambda g: V.text_value(g.get("fabric", "status"))),
    ("fabric_health", lambda g: V.text_value(g.get("fabric", "health", "summary"))),
    ("fabric_clique_id", lambda g: V.text_value(g.get("fabric", "cliqueId"))),
    ("fabric_cluster_uuid", lambda g: V.text_value(g.get("fabric", "clusterUuid"))),
)


#: the 610 ``-q`` nests the GPU's limits one level down ("GPU Power Readings" > "GPU Ceiling Power
#: Limit" > "Current/Requested/Default Power Limit", beside a "GPU Base Power" block of its own:
#: utkuozdemir/nvidia_gpu_exporter's RTX 2080 SUPER 610.57.04 capture); Min/Max stay at the top
_CEILING = "gpu_ceiling_power_limit"


def _power_limits(g: TNode):
    """(enforced, default) power limit, W: ``enforced_power_limit`` (the limit in force; pre-570
    XML), else ``current_power_limit`` (525+ ``gpu_power_readings``; 610+ under its "GPU Ceiling
    Power Limit" block), else ``power_limit``."""
    for block in ("gpu_power_readings", "power_readings"):
        node = g.at(block)
        if node is None or not node.children:
            continue
        ceiling = node.only(_CEILING)
        if ceiling is not None and ceiling.children:
            node = ceiling
        enforced = next((v for v in (node.get(n) for n in ("enforced_power_limit", "current_power_limit",
                                                            "power_limit")) if v is not None), None)
        dflt = node.get("default_power_limit")
        if enforced is not None or dflt is not None:
            return (V.float_value(enforced, field=f"{block}/enforced_power_limit"),
                    V.float_value(dflt, field=f"{block}/default_power_limit"))
    return None, None


def _str(v: str | None) -> str | None:
    if v is None:
        return None
    v = v.strip()
    return v or None


def _link(g: TNode) -> PcieLink:
    gen = g.at("pci", "pci_gpu_link_info", "pcie_gen")
    wid = g.at("pci", "pci_gpu_link_info", "link_widths")
    lk = PcieLink()
    if gen is not None:
        lk.max_gen = V.int_value(gen.get("max_link_gen"), field="max_link_gen")
        lk.current_gen = V.int_value(gen.get("current_link_gen"), field="current_link_gen")
        lk.device_max_gen = V.int_value(gen.get("max_device_link_gen"), field="max_device_link_gen")
        lk.host_max_gen = V.int_value(gen.get("max_host_link_gen"), field="max_host_link_gen")
    if wid is not None:
        lk.max_width = V.int_value(wid.get("max_link_width"), field="max_link_width")
        lk.current_width = V.int_value(wid.get("current_link_width"), field="current_link_width")
    return lk


def _reasons(g: TNode) -> dict:
    """clocks_event_reasons (535+) or clocks_throttle_reasons (older); canonical names only."""
    node = g.at("clocks_event_reasons") or g.at("clocks_throttle_reasons")
    out: dict = {}
    if node is None:
        return out
    for c in node.children:
        name = c.name
        for p in _REASON_PREFIXES:
            if name.startswith(p):
                name = name[len(p):]
        if name in CLOCKS_EVENT_BITS:
            v = V.bool_value(c.value, field=c.name)
            if name in out and out[name] != v:   # one reason twice with two values: contradictory
                raise ParseError(f"{node.name}: {name} given twice ({out[name]} and {v})")
            out[name] = v
    return out


#: clocks_event_reasons_counters_<suffix> (nvsmi_device_v13.dtd; -q "Clocks Event Reasons Counters",
#: translated by smi_text) -> canonical reason name (CLOCKS_EVENT_BITS)
COUNTER_REASONS = {"sw_power_cap": "sw_power_cap", "sync_boost": "sync_boost",
                   "sw_therm_slowdown": "sw_thermal_slowdown", "hw_therm_slowdown": "hw_thermal_slowdown",
                   "hw_power_brake": "hw_power_brake_slowdown"}
_COUNTER_PREFIX = "clocks_event_reasons_counters_"


def _reason_counters(g: TNode) -> dict:
    """``clocks_event_reasons_counters`` (535+): reason -> microseconds active since the driver
    loaded (``25483012608 us``), NA where unsupported. Cumulative history: a large SW power cap
    counter on an idle GPU is no active reason (corpus 011, 119). {} when the block is absent."""
    node = g.at("clocks_event_reasons_counters")
    out: dict = {}
    if node is None:
        return out
    for c in node.children:
        suffix = c.name[len(_COUNTER_PREFIX):] if c.name.startswith(_COUNTER_PREFIX) else c.name
        name = COUNTER_REASONS.get(suffix)
        if name is None:
            continue   # a counter a later driver adds: not read until a check needs it
        if name in out:
            raise ParseError(f"clocks_event_reasons_counters: {suffix} given twice (contradictory)")
        v = V.int_value(c.value, field=c.name)
        if isinstance(v, int) and v < 0:
            raise ParseError(f"{c.name}: negative duration {v}")
        out[name] = v
    return out


def _ecc(block: TNode | None) -> EccCounters:
    ec = EccCounters()
    if block is None:
        return ec
    if block.at("single_bit") is not None or block.at("double_bit") is not None:
        for kind in ("single_bit", "double_bit"):
            sub = block.at(kind)
            if sub is None:
                continue
            for c in sub.children:
                _once(sub, c.name)
                ec.by_location[f"{kind}.{c.name}"] = _count(c.value, f"{kind}.{c.name}")
        ec.correctable_total = ec.by_location.get("single_bit.total")
        ec.uncorrectable_total = ec.by_location.get("double_bit.total")
        return ec
    for c in block.children:
        if c.name == "sram_threshold_exceeded":
            continue
        _once(block, c.name)
        if c.children:   # a counter holds a number, not elements
            raise ParseError(f"{block.name}.{c.name}: a counter with child elements")
        ec.by_location[c.name] = _count(c.value, c.name)
    bl = ec.by_location
    ec.correctable_total = _sum(bl, ("sram_correctable", "dram_correctable"))
    ec.uncorrectable_total = _sum(bl, ("sram_uncorrectable", "sram_uncorrectable_parity",
                                       "sram_uncorrectable_secded", "dram_uncorrectable"))
    return ec


def _sum(values: dict, keys: tuple[str, ...]):
    """Sum of the integer parts; NA when every present part is NA; None when none present."""
    present = [values[k] for k in keys if k in values and values[k] is not None]
    if not present:
        return None
    ints = [v for v in present if isinstance(v, int)]
    return sum(ints) if ints else NA


def _scalar_na(node: TNode, what: str):
    """A block the driver printed as one value: ``N/A`` (or empty) means unsupported (pre-Ampere
    remapping, MIG, Ampere+ page retirement); anything else is not a shape we know."""
    v = (node.value or "").strip()
    if V.is_na(v) or not v:
        return NA
    raise ParseError(f"{what}: unexpected scalar {v[:60]!r}")


def _remapped(node: TNode | None):
    if node is None:
        return None
    if not node.children:
        return _scalar_na(node, "remapped_rows")
    rr = RemappedRows(
        correctable=V.int_value(node.get("remapped_row_corr"), field="remapped_row_corr"),
        uncorrectable=V.int_value(node.get("remapped_row_unc"), field="remapped_row_unc"),
        pending=V.bool_value(node.get("remapped_row_pending"), field="remapped_row_pending"),
        failure=V.bool_value(node.get("remapped_row_failure"), field="remapped_row_failure"),
    )
    hist = node.at("row_remapper_histogram")
    if hist is not None:
        for c in hist.children:
            key = c.name.replace("row_remapper_histogram_", "")
            rr.histogram[key] = V.int_value(c.value, field=c.name)
    return rr


def _retired(node: TNode | None):
    if node is None:
        return None
    if not node.children:
        return _scalar_na(node, "retired_pages")
    rp = RetiredPages(
        sbe=V.int_value(node.get("multiple_single_bit_retirement", "retired_count"), field="sbe retired_count"),
        dbe=V.int_value(node.get("double_bit_retirement", "retired_count"), field="dbe retired_count"),
    )
    flags = [V.bool_value(node.get(n), field=n) for n in ("pending_blacklist", "pending_retirement")]
    flags = [f for f in flags if f is not None]
    if any(f is True for f in flags):
        rp.pending = True
    elif any(f is False for f in flags):
        rp.pending = False
    elif flags:
        rp.pending = NA
    return rp


def _power(g: TNode):
    """Power draw, W: ``power_readings/power_draw`` (old), ``gpu_power_readings/power_draw``
    (525-560), else ``instant_power_draw`` then ``average_power_draw`` (570+)."""
    for block in ("gpu_power_readings", "power_readings"):
        for name in ("power_draw", "instant_power_draw", "average_power_draw"):
            v = g.get(block, name)
            if v is not None:
                return V.float_value(v, field=f"{block}/{name}")
    return None
