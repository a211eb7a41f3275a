"""Shared helpers of the cross-node tests: node evidence in the probe's real formats (ib.ports,
ib.guids, ib.iblinkinfo as iblinkinfo -l prints it), phase nodes over an MpiFleet, launchers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nodegate.bundle import Bundle, Evidence
from nodegate.crossnode.phase import PhaseNode
from nodegate.crossnode.spec import CableSpec

RATE_TEXT = {400: "400 Gb/sec (4X NDR)", 200: "200 Gb/sec (4X HDR)", 100: "100 Gb/sec (4X EDR)"}
LANE = {400: "106.25", 200: "53.125", 100: "25.78125"}


@dataclass
class Hca:
    hca: str
    rail: int
    switch: str
    switch_port: int
    rate: int = 400
    state: str = "ACTIVE"
    width: str = "4X"


def guid(node: str, i: int, kind: int = 0) -> str:
    h = sum(ord(c) * 131 ** k for k, c in enumerate(node)) % (1 << 32)
    return f"{0xb859 + kind:04x}{h:08x}{i:04x}"


def sysfs(g: str) -> str:
    return ":".join(g[i:i + 4] for i in range(0, 16, 4))


def switch_guid(name: str) -> str:
    return "0x" + guid(name, 0, kind=1)


def node_bundle(node: str, hcas: list[Hca]) -> Bundle:
    """What the probe gathers on a node with ``hcas``: sysfs ports and GUIDs, and iblinkinfo -l
    from each port (rdma-core iblinkinfo.c line format)."""
    ports, guids, links = [], [], []
    for i, h in enumerate(hcas):
        g = guid(node, i)
        st = {"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN"}[h.state]
        ph = "5: LinkUp" if h.state == "ACTIVE" else "3: Disabled"
        rate = RATE_TEXT[h.rate].replace("4X", h.width)
        ports += [f"== {h.hca}", "fw_ver: 28.39.1002", "hca_type: MT4129", f"== {h.hca} port 1", f"state: {st}",
                  f"phys_state: {ph}", f"rate: {rate}", "link_layer: InfiniBand"]
        guids += [f"== {h.hca}", f"node_guid: {sysfs(g)}", f"sys_image_guid: {sysfs(g)}", "board_id: MT_0000000838",
                  f"device: 0000:{0x18 + i:02x}:00.0", f"netdev: ibp{0x18 + i}s0", f"== {h.hca} port 1",
                  f"lid: 0x{10 + i:x}", "sm_lid: 0x1", f"rate: {rate}", f"gid0: fe80:0000:0000:0000:{sysfs(g)}"]
        links.append(f"== {h.hca} port 1")
        if h.state == "ACTIVE":
            links.append(f'0x{g} "{node + " " + h.hca:>30}"     {10 + i:>2}    1[  ] ==( {h.width} {LANE[h.rate]:>13} Gbps '
                         f'Active/  LinkUp)==>  {switch_guid(h.switch)}      5   {h.switch_port:>2}[  ] "{h.switch}" ( )')
        else:
            links.append(f'0x{g} "{node + " " + h.hca:>30}"      0    1[  ] ==(                Down/ Polling)==>'
                         f'             [  ] "" ( )')
    items = {k: Evidence(k, ("\n".join(v) + "\n").encode(), b"", 0) for k, v in
             (("ib.ports", ports), ("ib.guids", guids), ("ib.iblinkinfo", links))}
    return Bundle(node=node, items=items, meta={"status": "ok"})


def rail_hcas(node_index: int, rails: int = 2, *, leaf=lambda r: f"leaf-r{r}") -> list[Hca]:
    return [Hca(f"mlx5_{r}", r, leaf(r), node_index + 1) for r in range(rails)]


def plan_of(node: str, hcas: list[Hca]) -> list[CableSpec]:
    return [CableSpec(hca=h.hca, switch=h.switch, switch_port=h.switch_port, rail=h.rail) for h in hcas]


def fleet_nodes(fleet, *, rails: int = 2, gpus: int = 2, wrong_leaf: tuple[str, int] | None = None,
                exclude: dict[str, str] | None = None, domain=None) -> list[PhaseNode]:
    """PhaseNodes over an MpiFleet: its addresses and target URLs, H100 GPUs, two rails by
    default, the evidence of a planned cabling (``wrong_leaf``: (node, rail) cabled to the next
    rail's leaf while the plan says its own)."""
    out = []
    for i, (name, n) in enumerate(fleet.nodes.items()):
        if n.profile is None:
            hcas = rail_hcas(i, rails)
            out.append(PhaseNode(name, n.address, f"paramiko://{fleet.user}@{n.address}:{n.port}?ssh_identity_file="
                                 f"{fleet.client_key_path}", "NVIDIA H100 80GB HBM3", gpus,
                                 cables=plan_of(name, hcas), excluded=(exclude or {}).get(name, "")))
            continue
        planned = rail_hcas(i, rails)
        seen = [Hca(h.hca, h.rail, (f"leaf-r{(h.rail + 1) % rails}" if wrong_leaf == (name, h.rail) else h.switch),
                    h.switch_port) for h in planned]
        out.append(PhaseNode(name, n.address, f"paramiko://{fleet.user}@{n.address}:{n.port}?ssh_identity_file="
                             f"{fleet.client_key_path}", "NVIDIA H100 80GB HBM3", gpus, domain=domain,
                             excluded=(exclude or {}).get(name, ""), bundle=node_bundle(name, seen),
                             cables=plan_of(name, planned)))
    return out


def results(reports: Path) -> dict[str, dict]:
    """test id (after ``::``) -> results.jsonl record, every item of a nodegate run."""
    out = {}
    for line in (reports / "results.jsonl").read_text().splitlines():
        d = json.loads(line)
        out[d["nodeid"].split("::", 1)[1]] = d
    return out
