"""examples/site on replayed bundles (no SSH): the InfiniBand check on real ibstat output (corpus
115: 8 NDR InfiniBand ports Active at 400, 4 Ethernet functions, 3 of them Down), its traps and
the whole kind (other rates, a port down, missing tool, unparsable output)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from nodegate.bundle import Bundle, Evidence
from nodegate.parsers.corpus import parse_corpus_file

from .runner import ROOT, run_pytest

EXAMPLES = ROOT / "examples" / "site"
CORPUS_115 = ROOT / "tests" / "corpus" / "115-ibstat-h100-node-8-ndr-ib-active-3-ethernet-down.txt"
IBSTAT = parse_corpus_file(CORPUS_115)[1]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_parse_ibstat_of_the_corpus_capture():
    ports = _example("test_infiniband").parse_ibstat(IBSTAT)
    assert len(ports) == 12
    ib = [p for p in ports if p.link_layer == "InfiniBand"]
    assert [p.ca for p in ib] == ["mlx5_0", "mlx5_10", "mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9"]
    assert {(p.state, p.physical_state, p.rate) for p in ib} == {("Active", "LinkUp", 400.0)}
    eth = {p.ca: (p.state, p.rate) for p in ports if p.link_layer == "Ethernet"}
    assert eth == {"mlx5_1": ("Active", 100.0), "mlx5_2": ("Down", 40.0), "mlx5_7": ("Down", 40.0),
                   "mlx5_8": ("Down", 40.0)}


def _bundle(root: Path, node: str, ibstat: str, rc: int = 0, site_vars: dict | None = None) -> Path:
    spec = {"site_evidence": {"ib_ports": "ibstat"},
            "site_vars": {"ib_rate_gbps": 400, "ib_ports": 8} if site_vars is None else site_vars}
    b = Bundle(node, {}, {"node": node, "status": "ok", "spec": spec})
    err = b"ibstat: command not found" if rc == 127 else b""
    b.items["site_evidence.ib_ports"] = Evidence("site_evidence.ib_ports", ibstat.encode(), err, rc)
    return b.write(root)


_i = IBSTAT.index("CA 'mlx5_4'")
DOWN = IBSTAT[:_i] + IBSTAT[_i:].replace("State: Active", "State: Down", 1).replace(
    "Physical state: LinkUp", "Physical state: Polling", 1)

CASES = {
    # node: (ibstat output, rc, site_vars, outcome, message part)
    "corpus-115": (IBSTAT, 0, None, "pass", ""),
    "hdr-expected": (IBSTAT, 0, {"ib_rate_gbps": 200}, "fail", "InfiniBand ports not Active at 200 Gb/s: mlx5_0/1"),
    "port-down": (DOWN, 0, None, "fail", "mlx5_4/1: Down, Polling, 400 Gb/s"),
    "nine-expected": (IBSTAT, 0, {"ib_rate_gbps": 400, "ib_ports": 9}, "fail", "8 InfiniBand ports, expected 9"),
    "no-ibstat": ("", 127, None, "error", "tool missing (ibstat: command not found)"),
    "no-rate-in-spec": (IBSTAT, 0, {}, "error", "site_vars.ib_rate_gbps is not set"),
    "not-ibstat": ("CA 'x'\n\tPort 1:\n\t\tState: Active\n", 0, None, "error", "x port 1: no Rate, Link layer line"),
}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    root = tmp_path_factory.mktemp("ib")
    for node, (text, rc, sv, _, _) in CASES.items():
        _bundle(root / "bundles", node, text, rc, sv)
    return run_pytest([str(EXAMPLES / "test_infiniband.py"), "--replay", str(root / "bundles")], root / "reports",
                      nonet=True)


@pytest.mark.parametrize("node", list(CASES))
def test_infiniband_example_verdicts(replayed, node):
    _, _, _, outcome, part = CASES[node]
    name = f"test_infiniband_ports_active_at_rate[{node}]"
    assert replayed.outcomes()[name] == outcome, replayed.output[-3000:]
    props = replayed.properties(name)
    assert props["check_id"] == "SITE-IB-001" and props["severity"] == "critical"
    assert part in props["observed"]

