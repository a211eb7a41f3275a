"""Build baseline/current bundle sets from the real H200 capture bundle (inventories/samples/h200-vm).

``two_gpu`` turns the one-GPU VM capture into a two-GPU node (the second GPU a copy of the first at
bus 0000:00:07.0 with its own serial/UUID/minor, in every per-GPU evidence item), so per-GPU items
and GPU matching are exercised. Upgrade profiles edit one node's evidence the way the event
would show on a real node:

- ``lower_pcie``: ``max_link_gen``/``current_link_gen`` (and device max/current) of one GPU in smi.qx.
- ``add_ecc``: volatile and aggregate ``dram_uncorrectable`` of one GPU in smi.qx.
- ``add_remapped_rows``: ``remapped_row_corr`` of one GPU.
- ``upgrade_driver``: every occurrence of the driver version (module, banner, NVML, smi, firmware dir).
- ``upgrade_kernel``: ``uname -r``.
- ``lose_gpu``: the GPU vanishes from smi.qx / clocks samples / dev nodes, a Xid 79 line is logged.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.bundle_edit import give_identity, write_item

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "inventories" / "samples" / "h200-vm"
OLD_DRIVER = "580.159.04"
NEW_DRIVER = "580.172.08"
OLD_KERNEL = "6.18.44-fc-v657-gpu"
NEW_KERNEL = "6.18.50-fc-v701-gpu"
BUS0, BUS1 = "0000:00:06.0", "0000:00:07.0"
SERIAL0, SERIAL1 = "1650000000001", "1650000000002"
UUID0 = "GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a10"
UUID1 = "GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a11"


def _rw(p: Path, fn) -> None:
    write_item(p, fn(p.read_text()))


def set_meta(d: Path, node: str, spec: dict | None) -> None:
    m = json.loads((d / "meta.json").read_text())
    m["node"] = node
    m["spec"] = spec or {}
    (d / "meta.json").write_text(json.dumps(m, indent=2))


def _gpu_blocks(xml: str) -> list[tuple[int, int]]:
    return [(m.start(), xml.index("</gpu>", m.start()) + len("</gpu>")) for m in re.finditer(r"<gpu id=", xml)]


def _edit_gpu(d: Path, bus: str, fn) -> None:
    """Apply ``fn`` to the <gpu> block of ``bus`` (``0000:00:07.0``) in smi.qx."""
    p = d / "smi.qx.out"
    xml = p.read_text()
    for s, e in _gpu_blocks(xml):
        if f'<gpu id="0000{bus}">' in xml[s:e]:
            write_item(p, xml[:s] + fn(xml[s:e]) + xml[e:])
            return
    raise KeyError(bus)


def two_gpu(dst: Path) -> Path:
    """A copy of the H200 capture with a second GPU at BUS1."""
    shutil.copytree(H200, dst)
    short0, short1 = BUS0[5:], BUS1[5:]
    p = dst / "smi.qx.out"
    xml = p.read_text()
    (s, e), = _gpu_blocks(xml)
    g1 = (xml[s:e].replace(f"0000{BUS0}", f"0000{BUS1}").replace(SERIAL0, SERIAL1).replace(UUID0, UUID1)
          .replace("<minor_number>0</minor_number>", "<minor_number>1</minor_number>")
          .replace("<pci_device>06</pci_device>", "<pci_device>07</pci_device>"))
    xml = xml[:e] + "\n\t" + g1 + xml[e:]
    write_item(p, xml.replace("<attached_gpus>1</attached_gpus>", "<attached_gpus>2</attached_gpus>"))
    sysfs = (dst / "pci.sysfs.out").read_text()
    block, _, _ = sysfs.partition("gpus: 1\n")
    write_item(dst / "pci.sysfs.out", block + block.replace(short0, short1) + "gpus: 2\n")
    info = (dst / "driver.gpus_information.out").read_text()
    info1 = info.replace(BUS0, BUS1).replace(UUID0, UUID1).replace("Device Minor: \t 0", "Device Minor: \t 1")
    write_item(dst / "driver.gpus_information.out", info.rstrip("\n") + "\n" + info1)
    _rw(dst / "smi.clocks_samples.out",
        lambda t: t.rstrip("\n") + "\n" + t.strip().replace(f"0000{BUS0}", f"0000{BUS1}").replace("0,", "1,", 1) + "\n")
    _rw(dst / "dev.nvidia.out", lambda t: t.replace("nvidia0\n", "nvidia0\nnvidia1\n"))
    return dst


def clone(src: Path, dst: Path, node: str, spec: dict | None = None) -> Path:
    shutil.copytree(src, dst)
    set_meta(dst, node, spec)
    give_identity(dst, node)   # one machine per node (NG-INV-003)
    return dst


# ---------------------------------------------------------------------------- profiles
def lower_pcie(d: Path, bus: str, gen: int = 4) -> None:
    def f(block: str) -> str:
        for tag in ("max_link_gen", "current_link_gen", "device_current_link_gen", "max_device_link_gen"):
            block = re.sub(rf"<{tag}>\d</{tag}>", f"<{tag}>{gen}</{tag}>", block)
        return block
    _edit_gpu(d, bus, f)


def add_ecc(d: Path, bus: str, volatile: int = 2, aggregate: int = 2) -> None:
    def f(block: str) -> str:
        vs, ve = block.index("<volatile>"), block.index("</volatile>")
        as_, ae = block.index("<aggregate>"), block.index("</aggregate>")
        v = block[vs:ve].replace("<dram_uncorrectable>0<", f"<dram_uncorrectable>{volatile}<")
        a = block[as_:ae].replace("<dram_uncorrectable>0<", f"<dram_uncorrectable>{aggregate}<")
        return block[:vs] + v + block[ve:as_] + a + block[ae:]
    _edit_gpu(d, bus, f)


def add_remapped_rows(d: Path, bus: str, corr: int = 1) -> None:
    _edit_gpu(d, bus, lambda b: b.replace("<remapped_row_corr>0<", f"<remapped_row_corr>{corr}<"))


def upgrade_driver(d: Path, new: str = NEW_DRIVER) -> None:
    old_branch, new_branch = OLD_DRIVER.rsplit(".", 1)[0], new.rsplit(".", 1)[0]
    for p in d.glob("*.out"):
        t = p.read_text()
        if OLD_DRIVER in t or old_branch in t:
            write_item(p, t.replace(OLD_DRIVER, new).replace(old_branch, new_branch))


def upgrade_kernel(d: Path, new: str = NEW_KERNEL) -> None:
    for p in d.glob("*.out"):
        t = p.read_text()
        if OLD_KERNEL in t:
            write_item(p, t.replace(OLD_KERNEL, new))


def lose_gpu(d: Path, bus: str) -> None:
    """GPU ``bus`` fell off the bus: gone from nvidia-smi, Xid 79 in the kernel log (the module
    still lists it under /proc/driver/nvidia/gpus)."""
    p = d / "smi.qx.out"
    xml = p.read_text()
    for s, e in _gpu_blocks(xml):
        if f'<gpu id="0000{bus}">' in xml[s:e]:
            xml = xml[:s].rstrip("\t") + xml[e:].lstrip("\n")
            break
    write_item(p, re.sub(r"<attached_gpus>(\d+)</attached_gpus>",
                        lambda m: f"<attached_gpus>{int(m.group(1)) - 1}</attached_gpus>", xml))
    _rw(d / "smi.clocks_samples.out", lambda t: "".join(l for l in t.splitlines(True) if f"0000{bus}" not in l))
    short = bus[5:-2]
    _rw(d / "kernel.log.out", lambda t: t.rstrip("\n") + "\n" +
        f"[ 5123.456789] NVRM: Xid (PCI:0000:{short}): 79, pid=0, name=, GPU has fallen off the bus.\n")


# ---------------------------------------------------------------------------- scenarios
def not_passing_checks(bundle_dir: Path, spec: dict | None = None) -> list[str]:
    """Names of the registry checks that do not PASS on ``bundle_dir`` (any GPU) with ``spec``:
    the VM capture lacks systemctl/modinfo/dkms, so those checks ERROR/FAIL there. A scenario
    lists them in ``checks.skip`` so the normal checks pass and the regression items decide."""
    from nodegate import checks
    from nodegate.bundle import Bundle
    from nodegate.collect import NodeFacts
    from nodegate.spec import load_spec
    facts, sp = NodeFacts(Bundle.load(bundle_dir)), load_spec(spec or {})
    bad = []
    for cid, c in checks.load_all().items():
        slots = [None] if c.scope == "node" else checks.gpu_slots(facts, sp)
        for s in slots:
            try:
                ok = checks.evaluate(cid, facts, sp, s).ok
            except Exception:  # noqa: BLE001 - a crashing check is "not passing" here
                ok = False
            if not ok:
                bad.append(c.name)
                break
    return bad
