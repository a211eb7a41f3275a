"""Alternative evidence keys: the forms a person has in place of the probe's own.

A bundle built by hand or converted from an nvidia-bug-report (nodegate/bugreport) may carry the
``nvidia-smi -q`` text a colleague pasted, a ``--query-gpu`` CSV, an ``lspci -vvv`` excerpt or a
``systemctl status`` page instead of the probe's ``smi.qx`` / ``pci.sysfs`` /
``systemd.persistenced_show``. NodeFacts (nodegate/collect.py) reads the probe's key when the
bundle has it and one of these otherwise, through the same parsers (one per file:
parsers/smi_text.py, smi_csv.py, lspci.py, systemd.py). ``ALTERNATIVE_KEYS`` is the table
docs/bundle.md shows (tools/gen_bundle_doc.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .facts import GpuFacts, LspciLink, PcieLink, SmiReport
from .parsers import lspci as lspci_parser
from .parsers import smi_csv, smi_text, smi_xml


@dataclass(frozen=True)
class AltKey:
    key: str
    command: str      # what produced the text
    stands_for: str   # the probe key it replaces
    serves: str       # the checks it can serve
    cannot: str       # what it cannot serve (those checks ERROR naming the missing evidence)


ALTERNATIVE_KEYS: dict[str, AltKey] = {a.key: a for a in (
    AltKey("smi.q", "nvidia-smi -q (full, -d filtered or -i; any driver's padding: labels split on the first ' : ')",
           "smi.qx",
           "every check smi.qx serves: the text is translated to the XML's element names and mapped by the same "
           "code, so the facts are equal (tests/parsers/test_capture_equality.py, tests/core/test_altkeys.py on "
           "the H200 capture)",
           "only what the pasted text leaves out: a -d filtered excerpt (e.g. -d ECC) ERRORs the checks whose "
           "sections it lacks ('not reported')"),
    AltKey("smi.query_csv", "nvidia-smi --query-gpu=<fields> --format=csv[,nounits] (with its header line)", "smi.qx",
           "the checks whose fields the query names: NG-INV-001/002 (index, name, pci.bus_id, pci.device_id), "
           "NG-PCIE-001/002 (pcie.link.gen.*/width.*, pstate, clocks_event_reasons.*, utilization.gpu, "
           "clocks.current/max.graphics), NG-CLK-001 (clocks_event_reasons.*), NG-ECC-001/002 (ecc.mode.*, "
           "ecc.errors.*), NG-MEM-001 (remapped_rows.*), NG-MEM-002 (retired_pages.*), NG-MEM-003 "
           "(gpu_recovery_action), NG-PER-004 (persistence_mode), NG-CFG-002 (enforced.power.limit or power.limit, "
           "power.default_limit), NG-CFG-004 (compute_mode)",
           "fields the query does not name ERROR 'not reported' (e.g. GSP firmware version: NG-GSP-002; the 580+ "
           "repair flags: NG-ECC-002 on 580+); units in the header or values ([MiB], 84.51 W) are stripped"),
    AltKey("pci.lspci_vvv", "lspci -vvv (-nnDvvvxxx(x) as nvidia-bug-report 530+ runs it; -v alone has no Lnk* lines)",
           "the link values of smi.qx (pci_gpu_link_info)",
           "NG-PCIE-001 (LnkCap: capability) and NG-PCIE-002 (LnkSta: trained link; '(downgraded)' read) for GPUs "
           "whose nvidia-smi source lacks link values, and the GPUs themselves (NVIDIA VGA/3D functions) when "
           "the bundle has no nvidia-smi output at all",
           "NG-PCIE-003 (lspci -vvv shows no topology: the upstream-port rule needs pci.sysfs), and busy/idle: "
           "a link below spec with no P-state/GpuIdle evidence is ERROR 'cannot tell busy from idle'"),
    AltKey("systemd.persistenced_status", "systemctl status nvidia-persistenced (the unit's block)",
           "systemd.persistenced_show",
           "NG-PER-001 (Loaded: load state and unit file state, Active: active/sub state)",
           "NG-PER-002 (no effective ExecStart or DropInPaths in status output: ERROR naming "
           "systemd.persistenced_show)"),
)}

#: where GPU facts come from, first present wins (nvml.json is decided before, in collect.py)
SMI_KEYS = ("smi.qx", "smi.q", "smi.query_csv")
SOURCE_OF_KEY = {"smi.qx": "smi_xml", "smi.q": "smi_text", "smi.query_csv": "smi_csv"}


def smi_key(bundle) -> str:
    """The nvidia-smi evidence key GPU facts are read from: the probe's ``smi.qx`` when the bundle
    has it, else ``smi.q``, else ``smi.query_csv``; ``smi.qx`` when it has none (its error then
    says "evidence not collected: smi.qx")."""
    return next((k for k in SMI_KEYS if bundle.has(k)), "smi.qx")


def parse_smi(key: str, text: str) -> SmiReport:
    """SmiReport from the text of ``key`` (ParseError from the form's parser)."""
    if key == "smi.q":
        return smi_text.parse_smi_text(text)
    if key == "smi.query_csv":
        rows = smi_csv.parse_query_csv(text)
        drv = next((r.get("driver_version") for r in rows if isinstance(r.get("driver_version"), str)), None)
        return SmiReport(driver_version=drv or None, gpus=smi_csv.gpus_from_rows(rows))
    return smi_xml.parse_smi_xml(text)


def parse_lspci(text: str) -> list[LspciLink]:
    return lspci_parser.parse_lspci_vvv(text)


def _from_lspci(l: LspciLink) -> PcieLink:
    return PcieLink(current_gen=l.sta_gen, max_gen=l.cap_gen, current_width=l.sta_width, max_width=l.cap_width)


def fill_links(gpus: list[GpuFacts], links: list[LspciLink]) -> list[GpuFacts]:
    """``gpus`` with the link values their source lacks (every link field None) taken from the lspci
    stanza of the same bus id; GPUs that report a link keep theirs."""
    by_bdf = {l.bdf: l for l in links}
    out = []
    for g in gpus:
        lk = g.link
        l = by_bdf.get(g.pci_bus_id or "")
        empty = all(v is None for v in (lk.current_gen, lk.max_gen, lk.current_width, lk.max_width))
        why = g.field_errors.get("link")
        # a section a -q -d output did not print (issue 39.5) is filled like an absent one; a malformed
        # link value stays an error (it is not "absent")
        absent = why is None or why.startswith("section not collected")
        if l is not None and empty and absent:
            errs = {k: v for k, v in g.field_errors.items() if k != "link"}
            out.append(replace(g, link=_from_lspci(l), field_errors=errs))
        else:
            out.append(g)
    return out


def gpus_from_lspci(links: list[LspciLink]) -> list[GpuFacts]:
    """One GpuFacts per NVIDIA display-class function (bus id, device id, the description as name,
    the link), in lspci order: the GPUs of a bundle without nvidia-smi output."""
    out = []
    for l in (l for l in links if l.display):
        dev = l.vendor_device.split(":")[1] if l.vendor_device else None
        name = l.description.split(":", 1)[1].strip() if ":" in l.description else l.description
        out.append(GpuFacts(index=len(out), pci_bus_id=l.bdf, name=name, pci_device_id=dev, link=_from_lspci(l),
                            source="lspci"))
    return out
