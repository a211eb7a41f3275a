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
from ._limits import MAX_GPUS, check_gpu_count  # noqa: F401  (MAX_GPUS: re-exported, one cap for every source)

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
    tree = _parse_tree(text)
    if tree.name != "nvidia_smi_log":
        raise ParseError(f"nvidia-smi -q -x: root element is <{tree.name}>, not <nvidia_smi_log>")
    rep = SmiReport(
        driver_version=_opt(tree.get("driver_version")),
        cuda_version=_opt(tree.get("cuda_version")),
    )
    ag = tree.get("attached_gpus")
    if ag is not None:
        n = V.int_value(ag, field="attached_gpus")
        rep.attached_gpus = n if isinstance(n, int) else None
    gpus = [c for c in tree.children if c.name == "gpu"]
    # every GPU becomes items of its own: thousands from one hostile node would stall the run
    # (the XML cap alone allows ~300,000 tiny <gpu> elements); the cap of every GPU source
    check_gpu_count(len(gpus), "nvidia-smi -q -x")
    rep.gpus = [build_gpu(g, i, "smi_xml") for i, g in enumerate(gpus)]
    return rep


def _parse_tree(text: str) -> TNode:
    """The document as a TNode tree. defusedxml's parser refuses entity declarations and
    external references (billion laughs / XXE); DTD element declarations are fine (``--dtd``
    output). Its expat parser's element and text callbacks go straight to ``_TNodeBuilder``
    (no ElementTree elements and no second pass over them; the controller parses one report
    per node). The handlers defusedxml installs for entities, external references and DOCTYPE
    stay in place."""
    builder = _TNodeBuilder()
    parser = DET.DefusedXMLParser(target=builder, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    expat = parser.parser
    expat.ordered_attributes = True
    expat.buffer_text = True
    expat.StartElementHandler = builder.start
    expat.EndElementHandler = builder.end
    expat.CharacterDataHandler = builder.data
    try:
        parser.feed(text.encode("utf-8"))
        root = parser.close()
    except defusedxml.DefusedXmlException as e:
        raise ParseError(f"nvidia-smi -q -x: refused unsafe XML ({type(e).__name__})") from None
    except ET.ParseError as e:
        raise ParseError(f"nvidia-smi -q -x: not well-formed XML: {e}") from None
    except (ValueError, RecursionError) as e:
        raise ParseError(f"nvidia-smi -q -x: unreadable XML: {type(e).__name__}") from None
    if root is None:
        raise ParseError("nvidia-smi -q -x: no root element")
    return root


class _TNodeBuilder:
    """expat callbacks -> TNode tree (what an ElementTree of the document, converted, would give):
    a node's value is its text before its first child element, stripped (without children: all
    of its text, "" when none; with children: None when blank); a ``<gpu>``'s value is its ``id``
    attribute. Nesting deeper than _MAX_DEPTH is refused."""

    __slots__ = ("stack", "texts", "root")

    def __init__(self):
        self.stack: list[TNode] = []
        self.texts: list = []      # per open element: its text parts (list), or its value text once a child began (str)
        self.root: TNode | None = None

    def start(self, tag: str, attrs: list[str]) -> None:
        stack = self.stack
        if len(stack) > _MAX_DEPTH:
            raise ParseError("nvidia-smi -q -x: nesting too deep")
        node = TNode(tag)
        if tag == "gpu":
            node.value = next((attrs[i + 1] for i in range(0, len(attrs) - 1, 2) if attrs[i] == "id"), None)
        if stack:
            texts = self.texts
            if type(texts[-1]) is list:
                texts[-1] = "".join(texts[-1])   # the parent's value: its text before this first child
            stack[-1].children.append(node)
        else:
            self.root = node
        stack.append(node)
        self.texts.append([])

    def data(self, text: str) -> None:
        parts = self.texts[-1] if self.texts else None
        if type(parts) is list:
            parts.append(text)

    def end(self, tag: str) -> None:
        node = self.stack.pop()
        t = self.texts.pop()
        txt = (t if type(t) is str else "".join(t)).strip()
        if node.name != "gpu":
            node.value = (txt or None) if node.children else txt

    def close(self) -> TNode | None:
        return self.root


def _opt(v: str | None) -> str | None:
    if v is None:
        return None
    v = v.strip()
    return v or None
