"""The issue-19 probe functions on a fake sysfs tree, under every POSIX shell: NVSwitch listing, AER
counters of a GPU and its upstream ports, InfiniBand ports; and their parsers read what they print."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.parsers import parse

from .test_probe import SHELLS, _item_script, _run, _split

AER = {"correctable": ("RxErr 0", "BadTLP 3", "TOTAL_ERR_COR 3"),
       "nonfatal": ("DLP 0", "TOTAL_ERR_NONFATAL 0"),
       "fatal": ("DLP 1", "TOTAL_ERR_FATAL 1")}


def _dev(d: Path, **attrs):
    d.mkdir(parents=True, exist_ok=True)
    for k, v in attrs.items():
        (d / k).write_text(v + "\n")


def _fake(root: Path) -> None:
    """A GPU behind a switch port behind a root port; the switch port has fatal AER 1; one NVSwitch;
    two RDMA devices (InfiniBand Active NDR, Ethernet Down)."""
    rp = root / "sys/devices/pci0000:00/0000:00:01.0"
    sw = rp / "0000:01:00.0"
    gpu = sw / "0000:02:00.0"
    link = {"current_link_speed": "32.0 GT/s PCIe", "current_link_width": "16"}
    _dev(rp, vendor="0x8086", **link)
    _dev(sw, vendor="0x1000", **link)
    _dev(gpu, vendor="0x10de", **{"class": "0x030200"}, device="0x2330", **link)
    for d, aer in ((sw, AER), (gpu, {k: ("DLP 0", f"TOTAL_ERR_{'COR' if k == 'correctable' else k.upper()} 0")
                                     for k in AER})):
        for kind, lines in aer.items():
            (d / f"aer_dev_{kind}").write_text("\n".join(lines) + "\n")
    nvsw = root / "sys/devices/pci0000:80/0000:80:01.0/0000:83:00.0"
    _dev(nvsw, vendor="0x10de", **{"class": "0x068000"}, device="0x22a3")
    links = root / "sys/bus/pci/devices"
    links.mkdir(parents=True)
    (links / "0000:02:00.0").symlink_to("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0")
    (links / "0000:83:00.0").symlink_to("../../../devices/pci0000:80/0000:80:01.0/0000:83:00.0")
    for dev, state, phys, rate, layer in (("mlx5_0", "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand"),
                                          ("mlx5_1", "1: DOWN", "3: Disabled", "40 Gb/sec (4X QDR)", "Ethernet")):
        base = root / "sys/class/infiniband" / dev
        _dev(base, fw_ver="28.39.1002", hca_type="MT4129")
        _dev(base / "ports/1", state=state, phys_state=phys, rate=rate, link_layer=layer)


def _script(root: Path) -> tuple[str, str]:
    body = ("ng_nvfuncs\nng_lite pci.nvswitch ng_f_nvswitch\nng_lite pci.aer ng_f_aer\n"
            "ng_lite ib.ports ng_f_ibports\n")
    script, m = _item_script(body)
    return (script.replace("/sys/bus/pci/devices/*", f"{root}/sys/bus/pci/devices/*")
            .replace("!= /sys/devices ]", f"!= {root}/sys/devices ]")
            .replace("/sys/class/infiniband/*", f"{root}/sys/class/infiniband/*")), m


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_nvswitch_aer_and_ib_items_on_a_fake_sysfs(shell, tmp_path):
    root = tmp_path / "fake"
    _fake(root)
    script, m = _script(root)
    items, complete = _split(_run(shell, script), m)
    assert complete
    nvsw = parse("pci_nvswitch", items["pci.nvswitch"].stdout)
    assert [(f.bdf, f.device, f.pci_class) for f in nvsw] == [("0000:83:00.0", "0x22a3", "0x068000")]
    aer = parse("pci_aer", items["pci.aer"].stdout)
    assert [(r.bdf, r.role, r.upstream_of, r.files) for r in aer] == [
        ("0000:02:00.0", "gpu", None, 3), ("0000:01:00.0", "upstream", "0000:02:00.0", 3),
        ("0000:00:01.0", "upstream", "0000:02:00.0", 0)]
    assert (aer[1].fatal_total, aer[1].fatal, aer[1].correctable_total) == (1, {"DLP": 1}, 3)
    assert aer[1].correctable == {"BadTLP": 3}        # zero counters are not sent (RxErr 0)
    assert (aer[0].fatal_total, aer[0].nonfatal_total) == (0, 0)
    ports = parse("ib_ports", items["ib.ports"].stdout)
    assert [(p.device, p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.fw_ver) for p in ports] == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand", "28.39.1002"),
        ("mlx5_1", 1, "DOWN", "Disabled", 40.0, "Ethernet", "28.39.1002")]


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_aer_listing_is_the_same_without_grep(shell, tmp_path):
    """The counters are printed by one grep -H; without grep the shell's own read loop prints the same."""
    root = tmp_path / "fake"
    _fake(root)
    script, m = _script(root)
    marker = "if command -v grep >/dev/null 2>&1; then grep -H -E"
    assert script.count(marker) == 1
    outs = []
    for text in (script, script.replace(marker, "if command -v ng-no-such-tool >/dev/null 2>&1; then grep -H -E")):
        items, complete = _split(_run(shell, text), m)
        assert complete
        outs.append(items["pci.aer"].stdout)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_no_nvidia_function_and_no_rdma_device_give_empty_listings(shell, tmp_path):
    root = tmp_path / "empty"
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    script, m = _script(root)
    items, complete = _split(_run(shell, script), m)
    assert complete
    assert items["pci.nvswitch"].stdout == b"nvswitches: 0\n"
    assert items["pci.aer"].stdout == b"gpus: 0\n"
    assert items["ib.ports"].stdout == b"" and items["ib.ports"].rc == 0
