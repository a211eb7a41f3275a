"""Stage A, static fabric (no GPU time): per node and HCA port, state, rate, width, link layer,
GUIDs and the switch port at the other end; compared with the site's plan, one row per cable.

Evidence, in order of preference for the neighbour (issue 38 item 2):

1. ``ib.iblinkinfo`` (the node's probe: iblinkinfo from each local HCA port);
2. the fabric's ``ibnetdiscover`` output (one run from any node that reaches the SM), joined on
   the HCA's port GUID (``ib.guids``);
3. ``ibdiagnet``'s log (its link errors become rows of their own);
4. sysfs alone (``ib.ports``, ``ib.guids``): state, rate, width, GUIDs, but no neighbour: a
   planned cable is then ERROR (not compared), never PASS.

The plan: per node its ``cables`` (HCA port -> switch:port, rail) and the ``rails`` map (rail ->
leaf switch names), or an expected topology file (ibnetdiscover format) compared link by link.
Rail validation follows ibdiagnet ``--rail_validation``: HCA *i* of every node reaches rail *i*'s
leaf, and the HCAs on one leaf share one PCI address across nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..bundle import Bundle
from ..errors import NodegateError
from ..outcomes import Outcome
from ..parsers.ib_guids import parse_ib_guids
from ..parsers.ib_ports import parse_ib_ports
from ..parsers.ibdiagnet import IbdiagReport
from ..parsers.iblinkinfo import parse_iblinkinfo
from ..parsers.ibnetdiscover import Topology
from .model import CableRow
from .spec import CableSpec


@dataclass
class HcaPort:
    """One HCA port as observed. ``neighbour``: ``switch:port`` (the switch's description) or
    None when no evidence names it; ``neighbour_guid`` the switch's GUID; ``source`` which
    evidence named the neighbour."""

    node: str
    hca: str
    port: int
    state: str | None = None
    phys_state: str | None = None
    rate_gbps: float | None = None
    width: str | None = None
    link_layer: str | None = None
    node_guid: str | None = None
    port_guid: str | None = None
    pci: str | None = None
    neighbour: str | None = None
    neighbour_name: str | None = None
    neighbour_port: int | None = None
    neighbour_guid: str | None = None
    source: str = "sysfs"
    rail: int | None = None

    @property
    def end(self) -> str:
        return f"{self.node}:{self.hca}/{self.port}"

    @property
    def ib(self) -> bool:
        return (self.link_layer or "InfiniBand").lower() == "infiniband"


@dataclass
class StaticResult:
    """Stage A's output: ``ports`` per node (``{node: [HcaPort]}``), ``cables`` (one row per cable
    or topology link), ``errors`` (evidence that could not be read: the node and why), and
    ``rails``: node -> {rail: hca} for the per-HCA stage."""

    ports: dict[str, list[HcaPort]] = field(default_factory=dict)
    cables: list[CableRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rails: dict[str, dict[int, str]] = field(default_factory=dict)

    def port(self, node: str, hca: str) -> HcaPort | None:
        for p in self.ports.get(node, []):
            if p.hca == hca:
                return p
        return None

    def problems(self, node: str, hca: str) -> list[CableRow]:
        """The non-PASS cable rows of ``node:hca`` (the cross-check of a dynamic finding)."""
        pre = f"{node}:{hca}/"
        return [c for c in self.cables if c.node_end.startswith(pre) and c.verdict is not Outcome.PASS]


# ------------------------------------------------------------------------------- evidence
def node_ports(node: str, bundle: Bundle, errors: list[str]) -> list[HcaPort]:
    """The HCA ports of ``node`` from its probe bundle (ib.ports, ib.guids, ib.iblinkinfo)."""
    ports: dict[tuple[str, int], HcaPort] = {}
    try:
        for p in parse_ib_ports(bundle.text("ib.ports")):
            ports[(p.device, p.port)] = HcaPort(node, p.device, p.port, p.state, p.phys_state, p.rate_gbps,
                                                link_layer=p.link_layer)
    except NodegateError as e:
        errors.append(f"{node}: ib.ports not usable: {e}")
    if bundle.has("ib.guids"):
        try:
            for dev, ident in parse_ib_guids(bundle.text("ib.guids")).items():
                for n, pi in ident.ports.items():
                    hp = ports.setdefault((dev, n), HcaPort(node, dev, n))
                    hp.node_guid, hp.pci = ident.node_guid, ident.pci
                    hp.port_guid = pi.port_guid if hp.ib else None
                    hp.width = pi.width or hp.width
                    hp.rate_gbps = hp.rate_gbps if hp.rate_gbps is not None else pi.rate_gbps
        except NodegateError as e:
            errors.append(f"{node}: ib.guids not usable: {e}")
    if bundle.has("ib.iblinkinfo"):
        ev = bundle.get("ib.iblinkinfo")
        if ev.rc == 127:
            pass   # iblinkinfo not installed on the node: ibnetdiscover or sysfs then
        else:
            try:
                for lk in parse_iblinkinfo(bundle.text("ib.iblinkinfo")):
                    ca = lk.section.split(":", 1)[0] if lk.section else ""
                    hp = ports.get((ca, lk.port))
                    if hp is None or lk.remote_port is None:
                        continue
                    hp.neighbour_name, hp.neighbour_port = lk.remote_desc, lk.remote_port
                    hp.neighbour_guid = lk.remote_guid
                    hp.neighbour = f"{lk.remote_desc}:{lk.remote_port}"
                    hp.width = lk.width or hp.width
                    hp.source = "iblinkinfo"
            except NodegateError as e:
                errors.append(f"{node}: ib.iblinkinfo not usable: {e}")
    return [ports[k] for k in sorted(ports)]


def join_topology(ports: list[HcaPort], topo: Topology) -> None:
    """Fill the neighbour of ports iblinkinfo did not name from the discovered fabric, by the
    HCA's node GUID and port number (from the HCA's own block, else from the switch's line
    naming it: a filtered or truncated topology may list only one side)."""
    back = {(pl.peer_guid, pl.peer_port): pl for pl in topo.ports.values()}
    for hp in ports:
        if hp.neighbour is not None or not hp.node_guid:
            continue
        pl = topo.peer(hp.node_guid, hp.port)
        if pl is not None:
            sw, sw_port = pl.peer_guid, pl.peer_port
        elif (hp.node_guid, hp.port) in back:
            pl = back[(hp.node_guid, hp.port)]
            sw, sw_port = pl.guid, pl.port
        else:
            continue
        hp.neighbour_guid = sw
        hp.neighbour_name = topo.name(sw)
        hp.neighbour_port = sw_port
        hp.neighbour = f"{hp.neighbour_name}:{sw_port}"
        if pl.width:
            hp.width = pl.width.upper()
        hp.source = "ibnetdiscover"


# ------------------------------------------------------------------------------- comparison
def _is(switch: str, name: str | None, guid: str | None) -> bool:
    s = switch.strip().lower()
    return bool((name and name.strip().lower() == s) or (guid and guid.lower() == s)
                or (s.startswith("0x") and guid and int(s, 16) == int(guid, 16)))


def _rail_of_switch(rails: dict[int, list[str]], name: str | None, guid: str | None) -> int | None:
    for r, sws in rails.items():
        if any(_is(s, name, guid) for s in sws):
            return r
    return None


def compare_cable(hp: HcaPort | None, plan: CableSpec, node: str, rails: dict[int, list[str]],
                  rate_gbps: float | None) -> CableRow:
    """One planned cable against what was observed."""
    node_end = f"{node}:{plan.hca}/{plan.port}"
    planned = f"{plan.switch}:{plan.switch_port}"
    exp = f"{planned}, Active, {rate_gbps:g} Gb/s" if rate_gbps else f"{planned}, Active"
    if hp is None:
        return CableRow(node_end, planned, Outcome.FAIL, "missing", exp, "no such HCA port on the node",
                        plan.rail, source="ib.ports")
    base = dict(rail=plan.rail, guid=hp.port_guid or "", source=hp.source)
    if (hp.state or "").upper() != "ACTIVE":
        return CableRow(node_end, hp.neighbour or planned, Outcome.FAIL, "down", exp,
                        f"{hp.state or 'no state'}/{hp.phys_state or '?'}", **base)
    if hp.neighbour is None:
        return CableRow(node_end, planned, Outcome.ERROR, "no-neighbour-evidence", exp,
                        "neighbour unknown: no iblinkinfo on the node and no ibnetdiscover of the fabric "
                        "names this port", **base)
    observed = f"{hp.neighbour}, {hp.state}, {hp.rate_gbps:g} Gb/s" if hp.rate_gbps else hp.neighbour
    if not _is(plan.switch, hp.neighbour_name, hp.neighbour_guid):
        other = _rail_of_switch(rails, hp.neighbour_name, hp.neighbour_guid)
        problem = "wrong-rail" if plan.rail is not None and other is not None and other != plan.rail else "miswired"
        why = f"{observed} (rail {other}'s leaf)" if problem == "wrong-rail" else observed
        return CableRow(node_end, hp.neighbour, Outcome.FAIL, problem, exp, why, **base)
    if hp.neighbour_port != plan.switch_port:
        return CableRow(node_end, hp.neighbour, Outcome.FAIL, "miswired", exp, observed, **base)
    if plan.rail is not None and rails.get(plan.rail) and not any(
            _is(s, hp.neighbour_name, hp.neighbour_guid) for s in rails[plan.rail]):
        return CableRow(node_end, hp.neighbour, Outcome.FAIL, "wrong-rail", exp,
                        f"{observed}: not a leaf of rail {plan.rail} ({', '.join(rails[plan.rail])})", **base)
    if rate_gbps is None:
        return CableRow(node_end, hp.neighbour, Outcome.ERROR, "no-fabric-profile", exp,
                        f"{observed}; the rate is not judged without a fabric profile (nodegate.crossnode.fabric)", **base)
    if hp.rate_gbps is None or hp.rate_gbps < rate_gbps:
        narrow = bool(hp.width and hp.width.upper() != "4X")
        return CableRow(node_end, hp.neighbour, Outcome.FAIL, "degraded-width" if narrow else "degraded-rate", exp,
                        f"{observed}, {hp.width}" if narrow else observed, **base)
    return CableRow(node_end, hp.neighbour, Outcome.PASS, "", exp, observed, **base)


def compare_topology(expected: Topology, discovered: Topology) -> list[CableRow]:
    """Every link of the expected topology file against the discovered fabric, by GUID and port,
    from both of its ends; then every discovered link the file does not have. Rows keyed by both
    ends (``name:port``): ``missing`` (neither end has a link), ``miswired`` (an end is cabled
    elsewhere: the row names where), ``degraded`` (width or speed differ), ``unplanned``."""
    rows: list[CableRow] = []
    seen: set[tuple[str, int]] = set()

    def end(t: Topology, g: str, p: int) -> str:
        return f"{t.name(g)}:{p}"

    for (a, b, w, s) in expected.links:
        want = f"{end(expected, *b)} {w or ''}{s or ''}".strip()
        got_a, got_b = discovered.peer(*a), discovered.peer(*b)
        if got_a is not None and (got_a.peer_guid, got_a.peer_port) == b:
            seen.update((a, b))
            if w and s and (got_a.width, got_a.speed) != (w, s):
                rows.append(CableRow(end(expected, *a), end(expected, *b), Outcome.FAIL, "degraded", want,
                                     f"{got_a.width}{got_a.speed}", source="ibnetdiscover"))
            else:
                rows.append(CableRow(end(expected, *a), end(expected, *b), Outcome.PASS, "", want,
                                     f"{got_a.width or ''}{got_a.speed or ''}", source="ibnetdiscover"))
            continue
        if got_a is None and got_b is None:
            rows.append(CableRow(end(expected, *a), end(expected, *b), Outcome.FAIL, "missing", want,
                                 "no link on either end", source="ibnetdiscover"))
            continue
        found = []
        for mine, got in ((a, got_a), (b, got_b)):
            if got is not None:
                other = (got.peer_guid, got.peer_port)
                seen.update((mine, other))
                found.append(f"{end(discovered, *mine)} is cabled to {end(discovered, *other)}")
            else:
                found.append(f"{end(expected, *mine)} has no link")
        rows.append(CableRow(end(expected, *a), end(expected, *b), Outcome.FAIL, "miswired", want, "; ".join(found),
                             source="ibnetdiscover"))
    for (a, b, w, s) in discovered.links:
        if a in seen or b in seen:
            continue
        rows.append(CableRow(end(discovered, *a), end(discovered, *b), Outcome.FAIL, "unplanned",
                             "no link in the topology file", f"{w or ''}{s or ''}", source="ibnetdiscover"))
    return rows


def ibdiagnet_rows(rep: IbdiagReport, names: dict[str, str]) -> list[CableRow]:
    """ibdiagnet's link errors as rows; ``names`` maps an HCA's node GUID to ``node:hca``."""
    rows = []
    for m in rep.link_errors:
        a = names.get(m.end_a.guid or "", m.end_a.node) + f"/{m.end_a.port}"
        b = names.get(m.end_b.guid or "", m.end_b.node) + f"/{m.end_b.port}"
        rows.append(CableRow(a, b, Outcome.FAIL, "ibdiagnet", "no ibdiagnet error", m.problem, source="ibdiagnet"))
    return rows


def rail_validation(ports: dict[str, list[HcaPort]], rails: dict[int, list[str]]) -> list[CableRow]:
    """ibdiagnet --rail_validation's rule on observed neighbours: the HCAs reaching one leaf
    switch have one PCI address across nodes (rail i is the same HCA slot everywhere). A node
    whose HCA on that leaf sits at another PCI address is a row of its own (wrong-rail)."""
    by_leaf: dict[str, list[HcaPort]] = {}
    for plist in ports.values():
        for hp in plist:
            if hp.neighbour_name and hp.pci and hp.ib:
                by_leaf.setdefault(hp.neighbour_guid or hp.neighbour_name, []).append(hp)
    rows = []
    for leaf, hps in by_leaf.items():
        counts: dict[str, int] = {}
        for hp in hps:
            counts[hp.pci] = counts.get(hp.pci, 0) + 1
        if len(counts) < 2:
            continue
        major = max(counts, key=lambda k: (counts[k], k))
        for hp in hps:
            if hp.pci != major:
                rows.append(CableRow(hp.end, hp.neighbour or leaf, Outcome.FAIL, "wrong-rail",
                                     f"PCI {major} (the HCA slot every other node has on this leaf)",
                                     f"PCI {hp.pci}", hp.rail, hp.port_guid or "", "rail-validation"))
    return rows


def static_fabric(bundles: dict[str, Bundle], plan: dict[str, list[CableSpec]], *,
                  rails: dict[int, list[str]] | None = None, rate_gbps: float | None = None,
                  discovered: Topology | None = None, expected: Topology | None = None,
                  ibdiagnet: IbdiagReport | None = None, known_nodes: Iterable[str] | None = None,
                  where: dict[str, str] | None = None) -> StaticResult:
    """Stage A over ``bundles`` (node -> its probe bundle). ``plan``: node -> planned cables
    (empty: no per-cable plan); ``rails``: rail -> leaf switch names; ``rate_gbps``: the fabric
    profile's rate; ``discovered``/``expected``: ibnetdiscover topologies; ``known_nodes``: the
    inventory (a plan naming another node is ERROR naming it, and ``where[node]``, the
    ``file:line`` of its entry in the cable plan, when known)."""
    rails = {int(r): ([v] if isinstance(v, str) else list(v)) for r, v in (rails or {}).items()}
    res = StaticResult()
    known = set(known_nodes) if known_nodes is not None else set(bundles)
    for node in sorted(set(plan) - known):
        at = f" ({where[node]})" if where and node in where else ""
        for c in plan[node]:
            res.cables.append(CableRow(f"{node}:{c.hca}/{c.port}", f"{c.switch}:{c.switch_port}", Outcome.ERROR,
                                       "unknown-node", "a node of the inventory",
                                       f"the cable plan names {node!r}, which is not in the inventory{at}", c.rail,
                                       source="cable plan"))
        res.errors.append(f"cable plan names a node not in the inventory: {node}{at}")
    for node, b in sorted(bundles.items()):
        if b.gather_error:
            res.errors.append(f"{node}: not gathered ({b.gather_error})")
            res.ports[node] = []
            continue
        ports = node_ports(node, b, res.errors)
        if discovered is not None:
            join_topology(ports, discovered)
        res.ports[node] = ports
    for node in sorted(set(plan) & known - set(bundles)):
        for c in plan[node]:
            res.cables.append(CableRow(f"{node}:{c.hca}/{c.port}", f"{c.switch}:{c.switch_port}", Outcome.ERROR,
                                       "no-evidence", f"{c.switch}:{c.switch_port}",
                                       "no probe evidence from the node: the cable is not compared", c.rail,
                                       source="cable plan"))
    for node, ports in res.ports.items():
        cables = plan.get(node, [])
        by_key = {(p.hca, p.port): p for p in ports}
        for c in cables:
            hp = by_key.get((c.hca, c.port))
            if hp is not None:
                hp.rail = c.rail
            res.cables.append(compare_cable(hp, c, node, rails, rate_gbps))
        planned = {(c.hca, c.port) for c in cables}
        if plan and not cables:
            # a site plan that leaves this node out compares none of its cables: ERROR (not
            # evaluated), never an accepted node whose cabling nobody checked
            for hp in ports:
                if hp.ib and (hp.state or "").upper() == "ACTIVE":
                    res.cables.append(CableRow(hp.end, hp.neighbour or "?", Outcome.ERROR, "not-in-plan",
                                               "an entry in the cable plan", "the cable plan has no entry for "
                                               f"{node!r}: its cables are not compared",
                                               guid=hp.port_guid or "", source=hp.source))
        if cables:
            for hp in ports:
                if (hp.hca, hp.port) not in planned and hp.ib and (hp.state or "").upper() == "ACTIVE":
                    res.cables.append(CableRow(hp.end, hp.neighbour or "?", Outcome.FAIL, "unplanned",
                                               "no cable in the plan", hp.neighbour or "an active port",
                                               guid=hp.port_guid or "", source=hp.source))
        # rails for the per-HCA stage: the plan's, else the IB HCAs in PCI order
        ibp = [p for p in ports if p.ib]
        if any(p.rail is not None for p in ibp):
            res.rails[node] = {p.rail: p.hca for p in ibp if p.rail is not None}
        else:
            order = sorted(ibp, key=lambda p: (p.pci or "", p.hca, p.port))
            res.rails[node] = {i: p.hca for i, p in enumerate(order)}
            for i, p in enumerate(order):
                p.rail = i
    if expected is not None and discovered is not None:
        res.cables += compare_topology(expected, discovered)
    elif expected is not None:
        res.errors.append("a topology file is given but no discovered topology (ibnetdiscover) to compare it with")
    if ibdiagnet is not None:
        names = {p.node_guid: f"{p.node}:{p.hca}" for ps in res.ports.values() for p in ps if p.node_guid}
        res.cables += ibdiagnet_rows(ibdiagnet, names)
    failing = {c.node_end for c in res.cables if c.verdict is not Outcome.PASS}
    res.cables += [c for c in rail_validation(res.ports, rails) if c.node_end not in failing]
    return res


def _plan_lines(text: str) -> dict[str, tuple[int, list[int]]]:
    """node -> (line of its key, [line of each cable]) in a cable plan's YAML (1-based); {} when
    the text does not compose into a mapping (load_cable_plan then says why)."""
    import yaml

    from ..yamlio import SAFE_LOADER
    try:
        root = yaml.compose(text, Loader=SAFE_LOADER)
    except yaml.YAMLError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    out = {}
    for k, v in root.value:
        if isinstance(k, yaml.ScalarNode):
            items = v.value if isinstance(v, yaml.SequenceNode) else []
            out[k.value] = (k.start_mark.line + 1, [i.start_mark.line + 1 for i in items])
    return out


def cable_plan_where(text: str, source: str) -> dict[str, str]:
    """node -> ``source:line`` of its entry in a cable plan (the error naming an unknown node)."""
    return {n: f"{source}:{ln}" for n, (ln, _) in _plan_lines(text).items()}


def load_cable_plan(text: str, known_nodes: Iterable[str] | None = None, *,
                    source: str = "") -> dict[str, list[CableSpec]]:
    """A site cable plan (YAML ``{node: [ {hca, port, switch, switch_port, rail} ]}``) as CableSpecs.
    Raises SpecError naming the file and line (``source``: the file's name) and the node and
    cable that does not validate (``known_nodes`` is not checked here: ``static_fabric`` makes
    rows of unknown nodes)."""
    from pydantic import ValidationError

    from ..errors import SpecError
    from ..yamlio import safe_load
    name = source or "cable plan"
    try:
        data = safe_load(text)
    except Exception as e:  # yaml.YAMLError: the file is not YAML
        mark = getattr(e, "problem_mark", None)
        at = f"{name}:{mark.line + 1}" if mark is not None else name
        what = getattr(e, "problem", None) or str(e)
        raise SpecError(f"cable plan {at}: not YAML ({type(e).__name__}: {str(what)[:200]})") from None
    if not isinstance(data, dict):
        raise SpecError(f"cable plan {name}:1: not a mapping of node -> cables")
    lines = _plan_lines(text)
    out: dict[str, list[CableSpec]] = {}
    for node, cables in data.items():
        ln, cable_lines = lines.get(str(node), (0, []))
        at = f"{name}:{ln}" if ln else name
        if not isinstance(node, str) or not isinstance(cables, list):
            raise SpecError(f"cable plan {at}: {node!r} must map to a list of cables")
        specs = []
        for i, c in enumerate(cables):
            try:
                specs.append(CableSpec.model_validate(c))
            except ValidationError as e:
                cat = f"{name}:{cable_lines[i]}" if i < len(cable_lines) else at
                first = e.errors()[0] if e.errors() else {"loc": (), "msg": str(e)}
                key = ".".join(str(x) for x in first.get("loc", ()))
                why = f"{key}: {first.get('msg', '')}" if key else str(first.get("msg", ""))
                raise SpecError(f"cable plan {cat}: {node} cable {i + 1}: {why[:200]}") from None
        out[node] = specs
    return out
