"""Hand-built bundles for report tests (layout of nodegate/bundle.py) and the hostile strings
they carry. Used by the unit tests and the subprocess (real output) tests."""

from __future__ import annotations

import json
from pathlib import Path

SCRIPT_NAME = "<script>document.documentElement.dataset.pwned=1</script>"
IMG_SERIAL = "<img src=x onerror=\"document.documentElement.dataset.pwned=1\">"
HOSTILE_NODE = "evil<img src=x onerror=document.documentElement.dataset.pwned=1>"
CTRL = "\x1b[31mred\x1b[0m\x07bell\x00nul\x0bvt"

#: (index, bus id, serial, uuid, name, vbios, status) - status drives the synthetic GPU check
HEALTHY_GPUS = [(i, f"0000:{0x18 + i:02x}:00.0", f"165242000{i:04d}", f"GPU-0000000{i}-aaaa",
                 "NVIDIA H200", "96.00.99.00.01", "ok") for i in range(2)]


def make_bundle(root: Path, dirname: str, node: str | None = None, *, hostname: str = "",
                gpus=HEALTHY_GPUS, driver: str = "580.159.04", flavor: str = "open",
                kernel: str = "6.8.0-51-generic", status: str = "ok", error: str = "") -> Path:
    """Write ``root/dirname`` as a bundle of node ``node`` (default ``dirname``)."""
    d = Path(root) / dirname
    d.mkdir(parents=True, exist_ok=True)
    meta = {"node": node or dirname, "status": status, "gather_s": 1.25, "probe_version": "1"}
    if error:
        meta["error"] = error
    (d / "meta.json").write_text(json.dumps(meta))
    if status != "ok":
        return d
    (d / "meta.hostname.out").write_text((hostname or node or dirname) + "\n")
    (d / "meta.uname_r.out").write_text(kernel + "\n")
    banner = ("NVIDIA UNIX Open Kernel Module for x86_64  " if flavor == "open"
              else "NVIDIA UNIX x86_64 Kernel Module  ")
    (d / "driver.proc_version.out").write_text(f"NVRM version: {banner}{driver}  Release Build\n")
    lines = ["\t".join(str(x) for x in g) for g in gpus]
    (d / "test.gpus.out").write_text("\n".join(lines) + "\n")
    return d
