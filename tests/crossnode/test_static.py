"""Stage A, static fabric (issue 38 item 2): real iblinkinfo/ibnetdiscover/ibdiagnet outputs, the
site's cable plan and topology file, rail validation; every mismatch a row keyed by both ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.bundle import Bundle, Evidence
from nodegate.crossnode.spec import CableSpec
from nodegate.crossnode.static import cable_plan_where, compare_topology, load_cable_plan, static_fabric
from nodegate.errors import SpecError
from nodegate.outcomes import Outcome
from nodegate.parsers.ibdiagnet import parse_ibdiagnet
from nodegate.parsers.iblinkinfo import parse_iblinkinfo
from nodegate.parsers.ibnetdiscover import parse_ibnetdiscover

from .helpers import Hca, node_bundle, plan_of, rail_hcas

DATA = Path(__file__).resolve().parent / "data"
FIX = Path(__file__).resolve().parents[1] / "fixtures"
RAILS = {0: "leaf-r0", 1: "leaf-r1"}


# ------------------------------------------------------------------------- real outputs
def test_x5_cluster_topology_parses_whole_and_consistent():
    """ltaulell/HPC_toolset X5.topofile: a real 2020 QDR fabric, 11 switches, 89 HCAs."""
    t = parse_ibnetdiscover((DATA / "ibnetdiscover-x5-qdr.topo").read_text())
    kinds = [n.type for n in t.nodes.values()]
    assert kinds.count("Switch") == 11 and kinds.count("Ca") == 89
    assert len(t.links) == 159
    for (g, p), pl in t.ports.items():                      # every link listed from both ends agrees
        back = t.ports[(pl.peer_guid, pl.peer_port)]
        assert (back.peer_guid, back.peer_port) == (g, p)
    assert sum(1 for *_, w, s in t.links if (w, s) == ("4x", "DDR")) == 23


def test_x5_against_itself_every_link_passes():
    t = parse_ibnetdiscover((DATA / "ibnetdiscover-x5-qdr.topo").read_text())
    rows = compare_topology(t, t)
    assert len(rows) == 159 and {r.verdict for r in rows} == {Outcome.PASS}


def test_x5_with_one_cable_moved_and_one_degraded_is_two_rows_keyed_by_both_ends():
    text = (DATA / "ibnetdiscover-x5-qdr.topo").read_text()
    expected = parse_ibnetdiscover(text)
    # the HCA on switch 0008f10500200b50 port 4 is found on port 25 instead; another link came up at 1x
    moved = text.replace('[4]\t"H-003048c749cd0000"[1](3048c749cd0001)', '[25]\t"H-003048c749cd0000"[1](3048c749cd0001)')
    moved = moved.replace('[1](3048c749cd0001) \t"S-0008f10500200b50"[4]', '[1](3048c749cd0001) \t"S-0008f10500200b50"[25]')
    moved = moved.replace('"S-0008f10500200b50"[32]\t\t# lid 93 lmc 0 "Voltaire 4036 - 36 QDR ports switch" lid 9 4xDDR',
                          '"S-0008f10500200b50"[32]\t\t# lid 93 lmc 0 "Voltaire 4036 - 36 QDR ports switch" lid 9 1xDDR')
    moved = moved.replace('[32]\t"H-003048c707b60000"[1](3048c707b60001) \t\t# "MT25408 ConnectX Mellanox Technologies" lid 93 4xDDR',
                          '[32]\t"H-003048c707b60000"[1](3048c707b60001) \t\t# "MT25408 ConnectX Mellanox Technologies" lid 93 1xDDR')
    rows = [r for r in compare_topology(expected, parse_ibnetdiscover(moved)) if r.verdict is not Outcome.PASS]
    assert sorted(r.problem for r in rows) == ["degraded", "miswired"]
    miswired = next(r for r in rows if r.problem == "miswired")
    assert miswired.node_end == "Voltaire 4036 - 36 QDR ports switch:4"
    assert miswired.switch_end == "MT25408 ConnectX Mellanox Technologies:1"
    assert "is cabled to Voltaire 4036 - 36 QDR ports switch:25" in miswired.observed
    degraded = next(r for r in rows if r.problem == "degraded")
    assert degraded.observed == "1xDDR" and "4xDDR" in degraded.expected


def test_real_iblinkinfo_names_each_hcas_switch_port():
    """824380210/Linpack edr76_linpack_WI.md: an EDR SB7700 with two HCAs up, 16 ports down."""
    links = parse_iblinkinfo((DATA / "iblinkinfo-edr-sb7700.txt").read_text())
    cas = {l.node_desc: (l.remote_desc, l.remote_port, l.rate_gbps) for l in links if l.node_type == "CA"}
    assert cas == {"n02 HCA-1": ("MF0;SB7700:MSB7700/U1", 17, 100.0), "mgt mlx5_0": ("MF0;SB7700:MSB7700/U1", 36, 100.0)}
    down = [l for l in links if l.node_type == "Switch" and not l.up]
    assert len(down) == 16 and all(l.remote_port is None for l in down)


def test_ibdiagnet_link_errors_become_rows_with_both_ends():
    rep = parse_ibdiagnet((FIX / "ibdiagnet" / "docs_link_speed_width_errors.txt").read_text())
    from nodegate.crossnode.static import ibdiagnet_rows
    rows = ibdiagnet_rows(rep, {"0x0002c90300688830": "gpu07:mlx5_2"})
    assert len(rows) == 4 and {r.verdict for r in rows} == {Outcome.FAIL}
    assert rows[0].node_end == "Sec0d9a0300246e30/Nec0d9a0300246e30/19" and rows[0].switch_end == "switch-004/U1/20"
    assert rows[3].node_end == "gpu07:mlx5_2/20" and "link speed 2.5" in rows[3].observed


# ------------------------------------------------------------------------- the cable plan
def _static(nodes: dict[str, list[Hca]], plan: dict[str, list[Hca]] | None = None, **kw):
    bundles = {n: node_bundle(n, h) for n, h in nodes.items()}
    plan = plan if plan is not None else nodes
    return static_fabric(bundles, {n: plan_of(n, h) for n, h in plan.items()}, rails=RAILS, rate_gbps=400.0, **kw)


def test_a_cabling_as_planned_passes_every_cable_and_gives_rails():
    res = _static({"a": rail_hcas(0), "b": rail_hcas(1)})
    assert [(c.node_end, c.switch_end, c.verdict) for c in res.cables] == [
        ("a:mlx5_0/1", "leaf-r0:1", Outcome.PASS), ("a:mlx5_1/1", "leaf-r1:1", Outcome.PASS),
        ("b:mlx5_0/1", "leaf-r0:2", Outcome.PASS), ("b:mlx5_1/1", "leaf-r1:2", Outcome.PASS)]
    assert res.rails == {"a": {0: "mlx5_0", 1: "mlx5_1"}, "b": {0: "mlx5_0", 1: "mlx5_1"}}
    assert res.port("a", "mlx5_1").source == "iblinkinfo" and res.port("a", "mlx5_1").port_guid


def test_a_rail_cabled_to_the_wrong_leaf_is_named_by_both_ends():
    seen = [Hca("mlx5_0", 0, "leaf-r0", 2), Hca("mlx5_1", 1, "leaf-r0", 12)]   # rail 1 on rail 0's leaf
    res = _static({"a": rail_hcas(0), "b": seen}, {"a": rail_hcas(0), "b": rail_hcas(1)})
    (bad,) = [c for c in res.cables if c.verdict is not Outcome.PASS]
    assert (bad.node_end, bad.switch_end, bad.problem) == ("b:mlx5_1/1", "leaf-r0:12", "wrong-rail")
    assert bad.expected.startswith("leaf-r1:2") and bad.rail == 1 and bad.guid


@pytest.mark.parametrize("hca, problem, outcome", [
    (Hca("mlx5_1", 1, "leaf-r1", 2, state="DOWN"), "down", Outcome.FAIL),
    (Hca("mlx5_1", 1, "leaf-r1", 2, rate=200), "degraded-rate", Outcome.FAIL),
    (Hca("mlx5_1", 1, "leaf-r1", 2, rate=200, width="2X"), "degraded-width", Outcome.FAIL),
    (Hca("mlx5_1", 1, "leaf-r1", 7), "miswired", Outcome.FAIL),
])
def test_cable_problems(hca, problem, outcome):
    res = _static({"b": [Hca("mlx5_0", 0, "leaf-r0", 2), hca]}, {"b": rail_hcas(1)})
    (bad,) = [c for c in res.cables if c.verdict is not Outcome.PASS]
    assert (bad.node_end, bad.problem, bad.verdict) == ("b:mlx5_1/1", problem, outcome)


def test_no_neighbour_evidence_is_error_never_pass():
    b = node_bundle("a", rail_hcas(0))
    del b.items["ib.iblinkinfo"]                          # iblinkinfo not installed, no ibnetdiscover
    res = static_fabric({"a": b}, {"a": plan_of("a", rail_hcas(0))}, rails=RAILS, rate_gbps=400.0)
    assert {c.verdict for c in res.cables} == {Outcome.ERROR}
    assert all(c.problem == "no-neighbour-evidence" for c in res.cables)


def test_ibnetdiscover_fills_the_neighbour_by_node_guid():
    hcas = rail_hcas(0)
    b = node_bundle("a", hcas)
    del b.items["ib.iblinkinfo"]
    from .helpers import guid, switch_guid
    topo = []
    for i, h in enumerate(hcas):
        topo += [f'Switch\t36 "S-{switch_guid(h.switch)[2:]}"\t\t# "{h.switch}" enhanced port 0 lid 5 lmc 0',
                 f'[{h.switch_port}]\t"H-{guid("a", i)}"[1]({guid("a", i)}) \t\t# "a {h.hca}" lid {10 + i} 4xNDR', ""]
    res = static_fabric({"a": b}, {"a": plan_of("a", hcas)}, rails=RAILS, rate_gbps=400.0,
                        discovered=parse_ibnetdiscover("\n".join(topo)))
    assert {c.verdict for c in res.cables} == {Outcome.PASS}
    assert {res.port("a", h.hca).source for h in hcas} == {"ibnetdiscover"}


def test_an_active_port_the_plan_does_not_list_is_unplanned():
    res = _static({"a": rail_hcas(0, 3)}, {"a": rail_hcas(0, 2)})
    (bad,) = [c for c in res.cables if c.verdict is not Outcome.PASS]
    assert (bad.node_end, bad.problem) == ("a:mlx5_2/1", "unplanned")


def test_a_node_the_cable_plan_leaves_out_is_not_compared_and_never_passes():
    # a plan for node a only: node b's active ports are ERROR (nothing compared), not accepted
    res = static_fabric({"a": node_bundle("a", rail_hcas(0)), "b": node_bundle("b", rail_hcas(1))},
                        {"a": plan_of("a", rail_hcas(0))}, rails=RAILS, rate_gbps=400.0)
    b = [c for c in res.cables if c.node_end.startswith("b:")]
    assert b and {(c.verdict, c.problem) for c in b} == {(Outcome.ERROR, "not-in-plan")}
    assert "no entry for 'b'" in b[0].observed
    assert all(c.verdict is Outcome.PASS for c in res.cables if c.node_end.startswith("a:"))
    # no plan at all: nothing is compared with a plan, so nothing is "not in plan"
    assert not [c for c in static_fabric({"b": node_bundle("b", rail_hcas(1))}, {}, rails=RAILS,
                                         rate_gbps=400.0).cables if c.problem == "not-in-plan"]


def test_a_cable_plan_naming_a_node_not_in_the_inventory_is_error_naming_it():
    res = static_fabric({"a": node_bundle("a", rail_hcas(0))},
                        {"a": plan_of("a", rail_hcas(0)), "ghost07": plan_of("ghost07", rail_hcas(5))},
                        rails=RAILS, rate_gbps=400.0, known_nodes=["a"])
    ghost = [c for c in res.cables if c.node_end.startswith("ghost07")]
    assert len(ghost) == 2 and {c.verdict for c in ghost} == {Outcome.ERROR}
    assert "ghost07" in ghost[0].observed and any("ghost07" in e for e in res.errors)


def test_rail_validation_flags_an_hca_slot_that_differs_from_every_other_node_on_the_leaf():
    nodes = {n: rail_hcas(i) for i, n in enumerate("abc")}
    bundles = {n: node_bundle(n, h) for n, h in nodes.items()}
    # node c's rail-0 HCA sits at another PCI address than a's and b's
    g = bundles["c"].items["ib.guids"]
    bundles["c"].items["ib.guids"] = Evidence("ib.guids", g.stdout.replace(b"device: 0000:18:00.0", b"device: 0000:9a:00.0"),
                                              b"", 0)
    res = static_fabric(bundles, {}, rails=RAILS, rate_gbps=400.0)
    bad = [c for c in res.cables if c.verdict is not Outcome.PASS]
    assert [(c.node_end, c.problem, c.source) for c in bad] == [("c:mlx5_0/1", "wrong-rail", "rail-validation")]


def test_an_unreadable_node_is_an_error_and_the_others_are_kept():
    bad = Bundle(node="x", items={"ib.ports": Evidence("ib.ports", b"garbage line\n", b"", 0)}, meta={})
    res = static_fabric({"a": node_bundle("a", rail_hcas(0)), "x": bad}, {"a": plan_of("a", rail_hcas(0))},
                        rails=RAILS, rate_gbps=400.0)
    assert any(e.startswith("x: ib.ports not usable") for e in res.errors)
    assert {c.verdict for c in res.cables} == {Outcome.PASS}


def test_cable_plan_file_loads_and_refuses_what_does_not_validate():
    plan = load_cable_plan("gpu01:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1, rail: 0}\n")
    assert plan == {"gpu01": [CableSpec(hca="mlx5_0", switch="leaf-r0", switch_port=1, rail=0)]}
    for text, why in (("[a, b]", "not a mapping"), ("gpu01: {hca: x}", "must map to a list"),
                      ("gpu01:\n  - {hca: 'mlx5_0; rm -rf /', switch: s, switch_port: 1}", "gpu01 cable 1"),
                      ("gpu01: [\n", "not YAML")):
        with pytest.raises(SpecError, match=why):
            load_cable_plan(text)
    # with the file's name: file:line of the entry at fault
    text = ("gpu01:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1}\n"
            "gpu02:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 2}\n  - {hca: mlx5_1, switch_port: 2}\n")
    with pytest.raises(SpecError) as e:
        load_cable_plan(text, source="site/cables.yaml")
    assert str(e.value) == "cable plan site/cables.yaml:5: gpu02 cable 2: switch: Field required"
    with pytest.raises(SpecError, match=r"^cable plan site/cables.yaml:2: not YAML \(ParserError"):
        load_cable_plan("gpu01: [\n", source="site/cables.yaml")


def test_a_cable_plan_entry_of_an_unknown_node_is_named_by_file_and_line():
    text = ("a:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1, rail: 0}\n"
            "ghost07:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 6, rail: 0}\n")
    res = static_fabric({"a": node_bundle("a", rail_hcas(0)[:1])}, load_cable_plan(text), rails=RAILS,
                        rate_gbps=400.0, known_nodes=["a"], where=cable_plan_where(text, "site/cables.yaml"))
    assert res.errors == ["cable plan names a node not in the inventory: ghost07 (site/cables.yaml:3)"]
    (ghost,) = [c for c in res.cables if c.verdict is not Outcome.PASS]
    assert (ghost.node_end, ghost.switch_end, ghost.problem) == ("ghost07:mlx5_0/1", "leaf-r0:6", "unknown-node")
    assert ghost.observed.endswith("not in the inventory (site/cables.yaml:3)")
