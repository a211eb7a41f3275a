"""Parser for ``nvidia-smi -q -x`` (XML).

Usage (evidence key ``smi.qx``)::

    nvidia-smi -q -x            # also: nvidia-smi -q -x --dtd (DTD embedded)

Accepted: with or without ``<!DOCTYPE>`` (418 prints none), ``nvsmi_device_v10..v13.dtd``,
an embedded DTD (``--dtd``). Read with defusedxml: entity declarations and external
references are refused (ParseError) because node output is untrusted; input above
``MAX_XML_CHARS`` is refused before parsing.

Schema::

    SmiReport(driver_version: str|None, cuda_version: str|None, attached_gpus: int|None,
              gpus: [GpuFacts(source="smi_xml"), ...])   # in document order, index 0..n-1

Field sources (XML element -> GpuFacts): see ``_gputree.build_gpu``: ``pci/pci_bus_id``,
``product_name``, ``product_architecture``, ``pci/pci_device_id`` (``233510DE`` -> ``2335``),
``pci/pci_gpu_link_info/pcie_gen/{max_link_gen,current_link_gen,max_device_link_gen,
max_host_link_gen}``, ``link_widths/{max,current}_link_width``, ``clocks_event_reasons`` or
``clocks_throttle_reasons``, ``ecc_mode``, ``ecc_errors``, ``remapped_rows``,
``retired_pages``, ``gsp_firmware_version``, ``gpu_recovery_action``.

Example (H200, 580.159.04, abridged)::

    <nvidia_smi_log><driver_version>580.159.04</driver_version>
      <gpu id="00000000:00:06.0"><product_name>NVIDIA H200</product_name>
        <pci><pci_device_id>233510DE</pci_device_id>...<max_host_link_gen>N/A</max_host_link_gen>
    -> SmiReport(driver_version="580.159.04", gpus=[GpuFacts(pci_bus_id="0000:00:06.0",
       pci_device_id="2335", link=PcieLink(current_gen=5, max_gen=5, device_max_gen=5,
       host_max_gen=NA, current_width=16, max_width=16), ...)])
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import defusedxml
import defusedxml.ElementTree as DET

from ..errors import ParseError
from ..facts import SmiReport
from . import _values as V
from ._gputree import TNode, build_gpu

#: Largest XML accepted, characters (an 8-GPU -q -x is ~250 KB; the probe caps items at 8 MiB).
MAX_XML_CHARS = 32 * 1024 * 1024
_MAX_DEPTH = 64


def parse_smi_xml(text: str | bytes) -> SmiReport:
    """Parse ``nvidia-smi -q -x`` output. Empty input -> empty SmiReport.

    Raises ParseError: not XML, root is not ``nvidia_smi_log``, entities/external references,
    oversize input, or a malformed value in a field nodegate reads.
    """
    text = V.check_text(text, cap=MAX_XML_CHARS, what="nvidia-smi -q -x")
    if not text.strip():
        return SmiReport()
    root = _parse_root(text)
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"nvidia-smi -q -x: root element is <{root.tag}>, not <nvidia_smi_log>")
    tree = _to_tnode(root, 0)
    rep = SmiReport(
        driver_version=_opt(tree.get("driver_version")),
        cuda_version=_opt(tree.get("cuda_version")),
    )
    ag = tree.get("attached_gpus")
    if ag is not None:
        n = V.int_value(ag, field="attached_gpus")
        rep.attached_gpus = n if isinstance(n, int) else None
    gpus = [c for c in tree.children if c.name == "gpu"]
    rep.gpus = [build_gpu(g, i, "smi_xml") for i, g in enumerate(gpus)]
    return rep


def _parse_root(text: str) -> ET.Element:
    # defusedxml: DTD element declarations are fine (--dtd output), entity declarations and
    # external references are not (billion laughs / XXE).
    try:
        return DET.fromstring(text.encode("utf-8"), forbid_dtd=False, forbid_entities=True,
                              forbid_external=True)
    except defusedxml.DefusedXmlException as e:
        raise ParseError(f"nvidia-smi -q -x: refused unsafe XML ({type(e).__name__})") from None
    except ET.ParseError as e:
        raise ParseError(f"nvidia-smi -q -x: not well-formed XML: {e}") from None
    except (ValueError, RecursionError) as e:
        raise ParseError(f"nvidia-smi -q -x: unreadable XML: {type(e).__name__}") from None


def _to_tnode(el: ET.Element, depth: int) -> TNode:
    if depth > _MAX_DEPTH:
        raise ParseError("nvidia-smi -q -x: nesting too deep")
    node = TNode(el.tag)
    kids = list(el)
    if kids:
        node.children = [_to_tnode(k, depth + 1) for k in kids]
        txt = (el.text or "").strip()
        node.value = txt or None
    else:
        node.value = (el.text or "").strip()
    if el.tag == "gpu":
        node.value = el.get("id")
    return node


def _opt(v: str | None) -> str | None:
    if v is None:
        return None
    v = v.strip()
    return v or None
