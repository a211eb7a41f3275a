"""Node profiles: YAML files describing one simulated node's state, with ``base:`` inheritance.

A profile is a mapping (see tools/fleet/profiles/README.md for every key). ``base: <name>`` names
another profile in the same directory; the child is deep-merged over it (mappings merge key by key,
lists and scalars replace, ``null`` clears; ``expect:`` merges too, so a fault profile lists only
what its fault changes). Profiles whose name starts with ``_`` are abstract:
they only serve as bases and never become nodes.

``load_profiles(dir)`` -> {name: Profile}; ``Profile.data`` is the merged mapping with defaults
filled in (``normalize``), so the renderer never has to guess.
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .models import GPU_MODELS, SYSFS_SPEED

PROFILES_DIR = Path(__file__).with_name("profiles")

OUTCOMES = ("pass", "fail", "skip", "error")


class ProfileError(ValueError):
    """A profile is malformed (unknown key, bad base, bad outcome)."""


def deep_merge(base: dict, over: dict) -> dict:
    """Return ``base`` updated by ``over``: dicts recurse, anything else replaces."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@dataclass
class Profile:
    """One node profile: ``name`` (file stem), ``data`` (merged, normalized), ``chain`` (bases, root first)."""

    name: str
    data: dict
    chain: list[str] = field(default_factory=list)

    @property
    def abstract(self) -> bool:
        return self.name.startswith("_")

    @property
    def expect(self) -> dict:
        return self.data.get("expect") or {"*": "pass"}

    @property
    def spec(self) -> dict:
        return self.data.get("spec") or {}

    def renamed(self, node: str) -> "Profile":
        """A copy of this profile for another node name (``Fleet.add_copies``): own hostname,
        boot id, GPU serials and UUIDs (those derive from the node name)."""
        data = copy.deepcopy(self.data)
        n = data["node"]
        # the ids derived from the name the data was resolved under (a copy of a profile made
        # under another name keeps its origin's hostname): each node gets its own, as machines do
        origins = {self.name, n["hostname"]}
        if n["hostname"] == self.name:
            n["hostname"] = node
        if n["boot_id"] in {_boot_id(o) for o in origins}:
            n["boot_id"] = _boot_id(node)
        if n["machine_id"] in {_machine_id(o) for o in origins}:
            n["machine_id"] = _machine_id(node)
        return Profile(node, data, list(self.chain))


def read_raw(directory: Path) -> dict[str, dict]:
    raw = {}
    for p in sorted(Path(directory).glob("*.yaml")):
        d = yaml.safe_load(p.read_text()) or {}
        if not isinstance(d, dict):
            raise ProfileError(f"{p}: top level must be a mapping")
        raw[p.stem] = d
    return raw


def resolve(name: str, raw: dict[str, dict], _seen: tuple = ()) -> tuple[dict, list[str]]:
    """Merged mapping of ``name`` following ``base:`` links; ProfileError on cycles/unknown bases."""
    if name in _seen:
        raise ProfileError(f"base cycle: {' -> '.join(_seen + (name,))}")
    if name not in raw:
        raise ProfileError(f"unknown profile {name!r}" + (f" (base of {_seen[-1]})" if _seen else ""))
    d = dict(raw[name])
    base = d.pop("base", None)
    if base is None:
        return d, [name]
    merged, chain = resolve(base, raw, _seen + (name,))
    return deep_merge(merged, d), chain + [name]


def load_profiles(directory: Path = PROFILES_DIR, *, include_abstract: bool = False) -> dict[str, Profile]:
    raw = read_raw(directory)
    out = {}
    for name in raw:
        if name.startswith("_") and not include_abstract:
            continue
        data, chain = resolve(name, raw)
        out[name] = Profile(name, normalize(name, data), chain)
    return out


def load_profile(name: str, directory: Path = PROFILES_DIR) -> Profile:
    raw = read_raw(directory)
    data, chain = resolve(name, raw)
    return Profile(name, normalize(name, data), chain)


# --------------------------------------------------------------------------- defaults
TOP_KEYS = {"description", "node", "driver", "gpus", "modules", "dkms", "persistenced", "firmware",
            "kernel_log", "infiniband", "peermem_registered", "fabricmanager", "nvidia_smi",
            "tools_absent", "files", "spec", "expect", "faults", "ldconfig", "ib", "nvswitch", "perf"}


def _h(name: str, salt: str, n: int = 8) -> int:
    """Stable pseudo-random integer from a node name (serials, uuids, boot ids)."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{name}".encode()).digest()[:n], "big")


def _boot_id(name: str) -> str:
    return str(uuid.UUID(int=_h(name, "boot", 16)))


def _machine_id(name: str) -> str:
    """machine-id(5): 32 lower-case hex digits, set once per installation."""
    return _h(name, "machine", 16).to_bytes(16, "big").hex()


def _sd(dct: dict, key: str, default):
    """setdefault where an explicit ``null`` also takes the default (``files: null`` clears a base's files)."""
    if dct.get(key) is None:
        dct[key] = copy.deepcopy(default)
    return dct[key]


def normalize(name: str, d: dict) -> dict:
    """Fill every default so rendering is a pure function of the result. Raises ProfileError."""
    unknown = set(d) - TOP_KEYS
    if unknown:
        raise ProfileError(f"{name}: unknown keys {sorted(unknown)}")
    d = copy.deepcopy(d)
    node = _sd(d, "node", {})
    _sd(node, "kernel", "5.15.0-91-generic")
    _sd(node, "kernels", [node["kernel"]])
    _sd(node, "hostname", name)
    _sd(node, "uptime", "86400.42 172000.10")
    _sd(node, "vm", False)
    # issue 39.7: a Grace node (GH200): one GPU at PCI domain 0009 behind its root port (nvidia-smi
    # 00000009:01:00.0, as GH200 nodes report it), attached to the CPU by NVLink-C2C; aarch64
    _sd(node, "grace", False)
    _sd(node, "arch", "aarch64" if node["grace"] else "x86_64")
    _sd(node, "boot_id", _boot_id(name))
    _sd(node, "machine_id", _machine_id(name))
    _sd(node, "os_release", "Ubuntu 22.04.4 LTS")
    # /sys/class/dmi/id (the RMA sheet's system identity); serials derived from the node name
    dmi = _sd(node, "dmi", {})
    _sd(dmi, "sys_vendor", "Supermicro")
    _sd(dmi, "product_name", "SYS-821GE-TNHR")
    _sd(dmi, "product_serial", f"S{_h(name, 'dmi-serial', 6):012d}")
    _sd(dmi, "product_uuid", str(uuid.UUID(int=_h(name, "dmi-uuid", 16))))
    _sd(dmi, "board_vendor", dmi["sys_vendor"])
    _sd(dmi, "board_name", "X13DEG-OAD")
    _sd(dmi, "board_serial", f"OM{_h(name, 'dmi-board', 5):010d}")
    _sd(dmi, "bios_version", "2.1")

    drv = _sd(d, "driver", {})
    if "version" not in drv:
        raise ProfileError(f"{name}: driver.version is required")
    drv["version"] = str(drv["version"])
    _sd(drv, "flavor", "proprietary")
    _sd(drv, "ondisk_flavor", drv["flavor"])
    _sd(drv, "ondisk_version", drv["version"])
    _sd(drv, "userspace_version", drv["version"])
    _sd(drv, "install", "dkms")
    _sd(drv, "loaded", True)
    _sd(drv, "build", "Release Build  (dvs-builder@U16-I2-C04-12-1)  Fri Feb 23 00:00:00 UTC 2024"
                   if drv["flavor"] == "open" else "Fri Feb 23 00:00:00 UTC 2024")
    _sd(drv, "gcc", "gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)")
    _sd(drv, "smi_path", "/usr/bin/nvidia-smi")
    _sd(drv, "lib_dir", "/usr/lib/x86_64-linux-gnu")
    for k in ("flavor", "ondisk_flavor"):
        if drv[k] not in ("open", "proprietary"):
            raise ProfileError(f"{name}: driver.{k} must be open|proprietary")

    g = _sd(d, "gpus", {})
    _sd(g, "model", "h100-sxm")
    if g["model"] not in GPU_MODELS:
        raise ProfileError(f"{name}: unknown gpu model {g['model']!r}")
    _sd(g, "count", 8)
    _sd(g, "missing", [])
    _sd(g, "all", {})
    _sd(g, "per_gpu", {})
    g["per_gpu"] = {int(k): v for k, v in (g["per_gpu"] or {}).items()}
    bad = [i for i in list(g["per_gpu"]) + list(g["missing"]) if not 0 <= i < g["count"]]
    if bad:
        raise ProfileError(f"{name}: gpu index out of range: {bad}")

    mods = _sd(d, "modules", {})
    _sd(mods, "loaded", ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"])
    _sd(mods, "builtin", [])
    _sd(mods, "unload", True)
    _sd(mods, "on_disk", ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem"])

    dk = _sd(d, "dkms", {})
    _sd(dk, "format", "slash")
    _sd(dk, "kernels", None)
    _sd(dk, "suffix", {})
    _sd(dk, "lines", None)
    _sd(dk, "extra_lines", [])

    p = _sd(d, "persistenced", {})
    _sd(p, "mode", "daemon")  # daemon | legacy | none
    _sd(p, "user", "nvidia-persistenced")
    _sd(p, "uid", 120)
    _sd(p, "gid", 127)
    _sd(p, "pid", 2861)
    _sd(p, "unit_path", "/lib/systemd/system/nvidia-persistenced.service")
    _sd(p, "unit_text", None)
    _sd(p, "dropins", {})
    _sd(p, "show", {})
    _sd(p, "running", p["mode"] == "daemon")
    _sd(p, "argv", None)

    fw = _sd(d, "firmware", {})
    _sd(fw, "class_path", "")
    _sd(fw, "dir", None)
    _sd(fw, "files", ["gsp_ga10x.bin", "gsp_tu10x.bin"])
    _sd(fw, "empty", [])

    kl = _sd(d, "kernel_log", {})
    _sd(kl, "dmesg", "ok")  # ok | denied
    _sd(kl, "lines", [])
    _sd(kl, "boot_lines", True)

    _sd(d, "infiniband", [])
    _sd(d, "perf", None)   # issue 29: performance tool shims (tools/fleet/perf.py)
    _sd(d, "peermem_registered", "nvidia_peermem" in mods["loaded"])
    _sd(d, "fabricmanager", None)
    # issue 19: InfiniBand ports of the `infiniband` devices (sysfs, and ibstat when `ibstat: true`),
    # per-device overrides under `ports`; NVSwitch functions (default: the model's HGX count when the
    # node runs fabric manager, else none)
    ib = _sd(d, "ib", {})
    _sd(ib, "rate", 400)
    _sd(ib, "fw", "28.39.1002")
    _sd(ib, "hca_type", "MT4129")
    _sd(ib, "link_layer", "InfiniBand")
    _sd(ib, "ibstat", False)
    _sd(ib, "ports", {})
    nvs = _sd(d, "nvswitch", {})
    _sd(nvs, "count", GPU_MODELS[g["model"]]["nvswitches"] if d["fabricmanager"] and not node["vm"] else 0)
    smi = _sd(d, "nvidia_smi", {})
    _sd(smi, "hang", [])
    _sd(smi, "error", None)
    _sd(d, "tools_absent", [])
    _sd(d, "files", {})
    _sd(d, "ldconfig", True)
    _sd(d, "spec", {})
    exp = _sd(d, "expect", {"*": "pass"})
    for k, v in exp.items():
        if str(v).lower() not in OUTCOMES:
            raise ProfileError(f"{name}: expect[{k!r}] = {v!r} is not one of {OUTCOMES}")
    d["expect"] = {str(k): str(v).lower() for k, v in exp.items()}
    return d


# --------------------------------------------------------------------------- per-GPU state
def gpu_bus(d: dict, i: int) -> tuple[int, int, int, int]:
    """(domain, bus, device, function) of GPU slot ``i``."""
    if d["node"]["vm"]:
        return (0, 0, 6 + i, 0)
    if d["node"].get("grace"):
        return (9 + i, 1, 0, 0)
    from .models import BUS_LAYOUTS
    layout = BUS_LAYOUTS["hgx8"]
    bus = layout[i] if i < len(layout) else 0xE0 + i
    return (0, bus, 0, 0)


def gpu_state(d: dict, name: str, i: int) -> dict:
    """Effective state of GPU slot ``i`` (model defaults < gpus.all < gpus.per_gpu[i])."""
    g = d["gpus"]
    m = GPU_MODELS[g["model"]]
    drv = d["driver"]
    persist = "Enabled" if (d["persistenced"]["mode"] == "legacy" or d["persistenced"]["running"]) else "Disabled"
    base = {
        "pstate": "P0",
        "events": ["gpu_idle"],
        "utilization": 0,
        "pcie": {"max_gen": m["pcie_gen"], "cur_gen": m["pcie_gen"], "max_width": m["pcie_width"],
                 "cur_width": m["pcie_width"], "device_max_gen": m["pcie_gen"],
                 "host_max_gen": "N/A" if d["node"]["vm"] else m["pcie_gen"], "upstream": None,
                 "sysfs_max_gen": None},
        "ecc": {"mode": "Enabled", "pending": "Enabled", "volatile": {}, "aggregate": {}},
        "remap": {"corr": 0, "unc": 0, "pending": False, "failure": False, "histogram": None}
        if m["row_remap"] else None,
        "retired": {"sbe": 0, "dbe": 0, "pending": False} if m["retired_pages"] else None,
        "gsp_version": drv["version"] if m["gsp"] else "N/A",
        "persistence": persist,
        "recovery_action": "None",
        "serial": f"{m['serial_prefix']}{_h(name, 'serial') % 10**4:04d}{i + 1}",
        "uuid": f"GPU-{uuid.UUID(int=_h(name + str(i), 'uuid', 16))}",
        "minor": i,
        # issue 19: NVLink (links listed by nvidia-smi nvlink -s; none in a VM), `down` (<inactive>),
        # `speed` {link: GB/s}, `errors` {link: {replay, recovery, crc}}; fabric state (Hopper behind
        # NVSwitch: Completed/Success); PCIe replays and AER counters of the GPU / its upstream ports;
        # firmware and configuration as nvidia-smi -q -x prints them
        "nvlink": {"links": 0 if d["node"]["vm"] else m["nvlink_links"], "gbps": m["nvlink_gbps"], "down": [],
                   "speed": {}, "errors": {}},
        # (B200: its NVLink switch chips are no host PCI functions, the fabric manager still registers it)
        "fabric": {"state": "Completed", "status": "Success"} if m["fabric"] and (
            d["nvswitch"]["count"] or (m["nvswitch_device"] is None and m["nvlink_links"] and d["fabricmanager"]))
        else {"state": "N/A", "status": "N/A"},
        "replays": 0, "replay_rollovers": 0,
        "aer": None if d["node"]["vm"] else {"correctable": 0, "nonfatal": 0, "fatal": 0},
        "upstream_aer": {},
        "vbios": m["vbios"], "inforom": m["inforom"],
        "power_limit": float(m["power_limit"].split()[0]), "power_default": float(m["power_limit"].split()[0]),
        "mig": "Disabled", "mig_pending": None, "compute_mode": "Default",
    }
    st = deep_merge(base, g["all"] or {})
    st = deep_merge(st, g["per_gpu"].get(i) or {})
    for k in ("cur_gen", "max_gen", "device_max_gen"):
        if st["pcie"][k] not in SYSFS_SPEED:
            raise ProfileError(f"{name}: gpu{i} pcie.{k}={st['pcie'][k]!r} not a PCIe generation")
    return st
