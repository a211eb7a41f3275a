"""Parser for ``nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]``.

Usage::

    nvidia-smi --query-gpu=index,pci.bus_id,pstate,clocks_event_reasons.active --format=csv
    nvidia-smi --query-gpu=... --format=csv,noheader        # pass fields=[...] (known list)

Rows are split on ``', '`` (nvidia-smi's separator; values such as ``NVIDIA H200`` contain
spaces but never ``', '``). Header names lose their unit suffix (``power.draw [W]`` ->
``power.draw``); values lose their unit (``84.51 W``, ``0 %``, ``0 MiB``, ``0 us``); bracketed
or plain unsupported forms (``[N/A]``, ``[Not Supported]``,
``[Requested functionality has been deprecated]``, ``N/A``) become NA.
Field aliases (``clocks_throttle_reasons.*`` = ``clocks_event_reasons.*``, ``gpu_bus_id`` =
``pci.bus_id``, ``retired_pages.sbe`` = ``retired_pages.single_bit_ecc.count``...) are folded.

Schema::

    parse_query_csv(text, fields=None) -> [ {field: str | NA}, ... ]   # raw strings, per row
    gpus_from_rows(rows) -> [GpuFacts(source="smi_csv")]             # fields that map
    parse_clocks_samples(text) -> [ {index: GpuFacts(index, pci_bus_id, pstate,
                                      clocks_event_reasons_mask, clocks_event_reasons)} ]

Example::

    index, pcie.link.gen.max, clocks_event_reasons.active, power.draw [W]
    0, 5, 0x0000000000000001, 84.51 W
    -> [GpuFacts(index=0, link=PcieLink(max_gen=5), clocks_event_reasons_mask=1,
                 clocks_event_reasons={"gpu_idle": True, ...}, power_draw_w=84.51)]
"""

from __future__ import annotations


from ..errors import ParseError
from ..facts import (CLOCKS_EVENT_BITS, NA, EccCounters, GpuFacts, RemappedRows, RetiredPages,
                     _Unsupported)
from . import _values as V
from ._limits import check_gpu_count, number

MAX_CSV_CHARS = 8 * 1024 * 1024


_ALIASES = {
    "gpu_bus_id": "pci.bus_id", "gpu_name": "name", "gpu_serial": "serial", "gpu_uuid": "uuid",
    "retired_pages.sbe": "retired_pages.single_bit_ecc.count",
    "retired_pages.dbe": "retired_pages.double_bit.count",
    "remapped_rows.sbe": "remapped_rows.correctable", "remapped_rows.dbe": "remapped_rows.uncorrectable",
    "gpu.power.draw.instant": "power.draw.instant",
    "clocks.gr": "clocks.current.graphics", "clocks.max.gr": "clocks.max.graphics",
    "clocks.max.graphics_clock": "clocks.max.graphics",
}

#: The probe's smi.clocks_samples query (nodegate/probe/probe.sh ng_f_clocks).
CLOCKS_SAMPLE_FIELDS = ("index", "pci.bus_id", "pstate", "clocks_event_reasons.active")


def _unit_stripped(name: str) -> str:
    r"""``power.draw [W]`` -> ``power.draw``: a trailing ``[...]`` without ``]`` inside removed with
    the spaces before it. Without a regex: ``\s*\[[^\]]*\]\s*$`` was tried from every ``[`` of a
    header and took 1 min 57 s on a 100 KB one (quadratic)."""
    if not name.endswith("]"):
        return name
    i = name.rfind("[", 0, len(name) - 1)
    if i < 0 or "]" in name[i + 1:-1]:
        return name
    return name[:i].rstrip()


def canonical_field(name: str) -> str:
    """Header name without unit, with throttle->event and alias folding."""
    n = _unit_stripped(name.strip())
    n = n.replace("clocks_throttle_reasons", "clocks_event_reasons")
    return _ALIASES.get(n, n)


def parse_query_csv(text: str | bytes, fields: list[str] | tuple[str, ...] | None = None) -> list[dict]:
    """Rows as ``{canonical field: value}``; values are stripped strings or NA.

    ``fields`` given = ``noheader`` output (every line is data). Empty input -> [].
    Raises ParseError when a row has a different number of values than the header, or the
    text is an nvidia-smi error rather than CSV (e.g. 'Field "x" is not a valid field').
    """
    text = V.check_text(text, cap=MAX_CSV_CHARS, what="--query-gpu csv")
    lines = [ln.rstrip("\r") for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    if fields is None:
        header = [canonical_field(h) for h in lines[0].split(", ")]
        data = lines[1:]
    else:
        header = [canonical_field(h) for h in fields]
        data = lines
    # one row per GPU: refused before any row is built (2,000 rows made 44,000 items)
    check_gpu_count(len(data), "--query-gpu csv")
    if any(not h or " " in h for h in header):
        raise ParseError(f"--query-gpu csv: header is not a field list: {lines[0][:80]!r}")
    _no_field_twice(lines[0] if fields is None else ", ".join(fields), header)
    rows = []
    for ln in data:
        vals = ln.split(", ")
        if len(vals) != len(header):
            raise ParseError(f"--query-gpu csv: {len(vals)} values for {len(header)} fields: {ln[:80]!r}")
        rows.append({h: (NA if V.is_na(v) else v.strip()) for h, v in zip(header, vals)})
    return rows


def _no_field_twice(raw_header: str, header: list[str]) -> None:
    """ParseError when two columns name one field, directly (``ecc.errors.uncorrected.volatile.total``
    twice) or through an alias (``retired_pages.dbe`` and ``retired_pages.double_bit.count``,
    ``clocks_throttle_reasons.X`` and ``clocks_event_reasons.X``): a dict would keep the last value
    (7 then 0 PASSed a GPU with uncorrectable errors). Same rule as the XML path
    (``_gputree.TNode.only``): a field named twice is unreadable, never "last one wins"."""
    seen: set[str] = set()
    twice = [h for h in header if h in seen or seen.add(h)]
    if twice:
        raise ParseError(f"--query-gpu csv: field {twice[0]!r} named more than once in the header "
                         f"(contradictory): {raw_header[:120]!r}")


def _int(row, name):
    v = row.get(name)
    return v if isinstance(v, _Unsupported) else V.int_value(v, field=name)


def _bool(row, name):
    v = row.get(name)
    return v if isinstance(v, _Unsupported) else V.bool_value(v, field=name)


def _txt(row, name):
    v = row.get(name)
    return v if isinstance(v, _Unsupported) or v is None else (v or None)


def gpu_from_row(row: dict, position: int = 0) -> GpuFacts:
    """One GpuFacts from one CSV row; only the fields the row carries are set."""
    idx = _int(row, "index")
    bus = row.get("pci.bus_id")
    gf = GpuFacts(
        index=idx if isinstance(idx, int) else position,
        pci_bus_id=V.bus_id(bus) if isinstance(bus, str) and bus else None,
        name=_plain(_txt(row, "name")), serial=_txt(row, "serial"), uuid=_plain(_txt(row, "uuid")),
        vbios_version=_txt(row, "vbios_version"),
        pci_device_id=V.device_id_from_pci(row["pci.device_id"]) if isinstance(row.get("pci.device_id"), str) else None,
        persistence_mode=_bool(row, "persistence_mode"), pstate=_plain(_txt(row, "pstate")),
        ecc_mode_current=_bool(row, "ecc.mode.current"), ecc_mode_pending=_bool(row, "ecc.mode.pending"),
        recovery_action=_txt(row, "gpu_recovery_action"), mig_mode_current=_bool(row, "mig.mode.current"),
        temperature_c=_int(row, "temperature.gpu"),
        source="smi_csv",
    )
    lk = gf.link
    lk.current_gen = _int(row, "pcie.link.gen.current") if "pcie.link.gen.current" in row else _int(row, "pcie.link.gen.gpucurrent")
    lk.max_gen = _int(row, "pcie.link.gen.max")
    lk.device_max_gen = _int(row, "pcie.link.gen.gpumax")
    lk.host_max_gen = _int(row, "pcie.link.gen.hostmax")
    lk.current_width = _int(row, "pcie.link.width.current")
    lk.max_width = _int(row, "pcie.link.width.max")
    _reasons(row, gf)
    gf.ecc_volatile = _ecc(row, "volatile")
    gf.ecc_aggregate = _ecc(row, "aggregate")
    if "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded" in row:
        gf.sram_threshold_exceeded = _bool(row, "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded")
    gf.remapped_rows = _remapped(row)
    gf.retired_pages = _retired(row)
    gf.utilization_gpu = _int(row, "utilization.gpu")
    gf.graphics_clock_mhz = _int(row, "clocks.current.graphics")
    gf.max_graphics_clock_mhz = _int(row, "clocks.max.graphics")
    p = row.get("power.draw", row.get("power.draw.instant"))
    gf.power_draw_w = p if isinstance(p, _Unsupported) else V.float_value(p, field="power.draw")
    # the query names them as often as not (utkuozdemir/nvidia_gpu_exporter's captures, 590-610): a value the
    # row carries is read, never reported as "not reported" (NG-CFG-002, NG-CFG-004)
    gf.compute_mode = _plain(_txt(row, "compute_mode"))
    gf.power_limit_w = _watts(row, "enforced.power.limit" if "enforced.power.limit" in row else "power.limit")
    gf.power_limit_default_w = _watts(row, "power.default_limit")
    return gf


def _watts(row: dict, name: str):
    """A power limit in W (the unit already stripped); None when the row lacks the field."""
    if name not in row:
        return None
    v = row[name]
    return v if isinstance(v, _Unsupported) else V.float_value(v, field=name)


def _plain(v):
    return None if isinstance(v, _Unsupported) else v


def _reasons(row: dict, gf: GpuFacts) -> None:
    active = row.get("clocks_event_reasons.active")
    if active is not None:
        gf.clocks_event_reasons_mask = active if isinstance(active, _Unsupported) else _mask(active)
    for name in CLOCKS_EVENT_BITS:
        key = f"clocks_event_reasons.{name}"
        if key in row:
            gf.clocks_event_reasons[name] = _bool(row, key)
    if isinstance(gf.clocks_event_reasons_mask, int):
        for name, bit in CLOCKS_EVENT_BITS.items():
            gf.clocks_event_reasons.setdefault(name, bool(gf.clocks_event_reasons_mask & bit))


def _mask(v: str) -> int:
    try:
        return number(v, "clocks_event_reasons.active", 16 if v.lower().startswith("0x") else 10)
    except ParseError:
        raise ParseError(f"clocks_event_reasons.active: not a bitmask: {v[:40]!r}") from None


def _ecc(row: dict, scope: str) -> EccCounters:
    ec = EccCounters()
    pre_c, pre_u = f"ecc.errors.corrected.{scope}.", f"ecc.errors.uncorrected.{scope}."
    for k in row:
        if k.startswith(pre_c) and k != pre_c + "total":
            ec.by_location["corrected." + k[len(pre_c):]] = _int(row, k)
        elif k.startswith(pre_u) and k != pre_u + "total" and "thresholdExceeded" not in k:
            ec.by_location["uncorrected." + k[len(pre_u):]] = _int(row, k)
    if pre_c + "total" in row:
        ec.correctable_total = _int(row, pre_c + "total")
    if pre_u + "total" in row:
        ec.uncorrectable_total = _int(row, pre_u + "total")
    return ec


def _remapped(row: dict):
    keys = [k for k in row if k.startswith("remapped_rows.")]
    if not keys:
        return None
    vals = [row[k] for k in keys]
    if all(isinstance(v, _Unsupported) for v in vals):
        return NA
    rr = RemappedRows(
        correctable=_int(row, "remapped_rows.correctable"),
        uncorrectable=_int(row, "remapped_rows.uncorrectable"),
        pending=_bool(row, "remapped_rows.pending"),
        failure=_bool(row, "remapped_rows.failure"),
    )
    for h in ("max", "high", "partial", "low", "none"):
        k = f"remapped_rows.histogram.{h}"
        if k in row:
            rr.histogram[h] = _int(row, k)
    return rr


def _retired(row: dict):
    keys = ("retired_pages.single_bit_ecc.count", "retired_pages.double_bit.count", "retired_pages.pending")
    if not any(k in row for k in keys):
        return None
    return RetiredPages(sbe=_int(row, keys[0]), dbe=_int(row, keys[1]), pending=_bool(row, keys[2]))


def gpus_from_rows(rows: list[dict]) -> list[GpuFacts]:
    return [gpu_from_row(r, i) for i, r in enumerate(rows)]


def parse_query_gpu(text: str | bytes, fields=None) -> list[GpuFacts]:
    """``parse_query_csv`` then ``gpus_from_rows``."""
    return gpus_from_rows(parse_query_csv(text, fields))


def parse_clocks_samples(text: str | bytes) -> list[dict[int, GpuFacts]]:
    """The probe's ``smi.clocks_samples`` item: noheader rows of CLOCKS_SAMPLE_FIELDS, samples
    after the first introduced by ``# sample N``. Returns one ``{index: GpuFacts}`` per sample
    (pstate, pci_bus_id, clocks_event_reasons_mask and the reasons decoded from the mask).
    Empty input -> []."""
    text = V.check_text(text, cap=MAX_CSV_CHARS, what="clocks samples")
    samples: list[list[str]] = [[]]
    for ln in text.splitlines():
        if not ln.strip():
            continue
        if ln.startswith("# sample"):
            samples.append([])
            continue
        samples[-1].append(ln)
    out = []
    for lines in samples:
        if not lines:
            continue
        gpus = parse_query_gpu("\n".join(lines), CLOCKS_SAMPLE_FIELDS)
        out.append({g.index: g for g in gpus})
    return out
