"""Time-varying tool shims for burn-in tests (POSIX sh + busybox only: they also run in chroots).

Time is ``$(date +%s) - $NG_BURNIN_T0``: the burn-in script exports the epoch second it started,
so a shim knows how far into the window it is without writing anything on the node.

``Scenario`` describes a node: GPUs (base field values), phases (from second ``at`` GPU ``gpu``
reports other values; a value ``=expr`` is shell arithmetic over ``t``), GPUs that vanish,
kernel log lines that appear, and the loads present (gpu_burn, dcgmi) with their behaviour.
``write_shims(dir, scenario)`` writes executable shims into ``dir``.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

#: Fields a current (580) driver accepts; an "old driver" scenario drops some.
ALL_FIELDS = ("timestamp", "index", "pci.bus_id", "pstate", "clocks_event_reasons.active",
              "clocks_throttle_reasons.active", "pcie.link.gen.current", "pcie.link.width.current",
              "temperature.gpu", "temperature.gpu.tlimit", "power.draw", "clocks.sm", "utilization.gpu",
              "ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.volatile.total",
              "remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending",
              "clocks_event_reasons_counters.sw_power_cap", "clocks_event_reasons_counters.sw_thermal_slowdown",
              "clocks_event_reasons_counters.hw_thermal_slowdown",
              "clocks_event_reasons_counters.hw_power_brake_slowdown")
OLD_DRIVER_FIELDS = tuple(f for f in ALL_FIELDS if not f.startswith(("clocks_event_reasons", "temperature.gpu.tlimit")))

#: A busy H200 (values from the capture's idle row, raised to full load).
BUSY = {"pstate": "P0", "clocks_event_reasons.active": "0x0000000000000000", "pcie.link.gen.current": "5",
        "pcie.link.width.current": "16", "temperature.gpu": "62", "temperature.gpu.tlimit": "25",
        "power.draw": "650.10", "clocks.sm": "1980", "utilization.gpu": "100",
        "ecc.errors.uncorrected.volatile.total": "0", "ecc.errors.corrected.volatile.total": "0",
        "remapped_rows.correctable": "0", "remapped_rows.uncorrectable": "0", "remapped_rows.pending": "No",
        "clocks_event_reasons_counters.sw_power_cap": "=t*200000",
        "clocks_event_reasons_counters.sw_thermal_slowdown": "0",
        "clocks_event_reasons_counters.hw_thermal_slowdown": "0",
        "clocks_event_reasons_counters.hw_power_brake_slowdown": "0"}
#: Before the load: idle at P0 with GpuIdle, the link trained down (legitimate while idle).
IDLE = {"clocks_event_reasons.active": "0x0000000000000001", "pcie.link.gen.current": "1", "power.draw": "84.51",
        "clocks.sm": "345", "utilization.gpu": "0", "temperature.gpu": "35", "temperature.gpu.tlimit": "52",
        "clocks_event_reasons_counters.sw_power_cap": "0"}

BUS_IDS = ("00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0")


@dataclass
class Phase:
    at: int
    gpu: int
    values: dict[str, str]


@dataclass
class Scenario:
    gpus: int = 2
    fields: tuple[str, ...] = ALL_FIELDS
    phases: list[Phase] = field(default_factory=list)
    busy_from: int = 1                        # idle values before this second
    vanish: dict[int, int] = field(default_factory=dict)   # gpu -> second it falls off the bus
    klog_base: list[str] = field(default_factory=lambda: [
        "[    0.613686] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build"])
    klog_new: list[tuple[int, str]] = field(default_factory=list)  # (second, line)
    gpu_burn: bool = True
    gpu_burn_die_at: int | None = None        # exits 1 at this second with a CUDA error
    dcgmi: dict | None = None                 # {"seconds": n, "json": {...}, "rc": 0}
    dmesg: bool = True


def _var(f: str) -> str:
    return "F_" + re.sub(r"[^A-Za-z0-9]", "_", f)


def _val(v: str) -> str:
    if v.startswith("="):
        expr = v[1:]
        if not re.fullmatch(r"[0-9t+\-*/() ]+", expr):
            raise ValueError(expr)
        return f'"$(({expr}))"'
    return shlex.quote(v)


def smi_shim(sc: Scenario) -> str:
    valid = "|".join(sc.fields)
    lines = ["#!/bin/sh", "# burn-in test shim: nvidia-smi --query-gpu (tests/burnin/shims.py)",
             't0=${NG_BURNIN_T0:-0}; now=$(date +%s)',
             'if [ "$t0" -gt 0 ]; then t=$((now - t0)); else t=0; fi',
             "q=", 'for a in "$@"; do case "$a" in --query-gpu=*) q=${a#--query-gpu=} ;; esac; done',
             '[ -n "$q" ] || { echo "shim: unsupported: $*" >&2; exit 2; }',
             'fl=$(printf "%s" "$q" | tr "," " ")',
             'for f in $fl; do case "$f" in ' + valid + ') ;; '
             '*) echo "Field \\"$f\\" is not a valid field to query."; exit 2 ;; esac; done']
    for g, at in sc.vanish.items():
        lines.append(f'if [ "$t" -ge {at} ]; then echo "Unable to determine the device handle for GPU'
                     f'{BUS_IDS[g]}: Unknown Error" >&2; fi')
    lines.append("gpu() {")
    lines.append("  i=$1")
    for k, v in BUSY.items():
        lines.append(f"  {_var(k)}={_val(v)}")
    lines.append(f'  if [ "$t" -lt {sc.busy_from} ]; then')
    for k, v in IDLE.items():
        lines.append(f"    {_var(k)}={_val(v)}")
    lines.append("  fi")
    for ph in sorted(sc.phases, key=lambda p: p.at):
        sets = "; ".join(f"{_var(k)}={_val(v)}" for k, v in ph.values.items())
        lines.append(f'  if [ "$t" -ge {ph.at} ] && [ "$i" = {ph.gpu} ]; then {sets}; fi')
    lines.append("  case $i in " + " ".join(f"{g}) F_pci_bus_id={BUS_IDS[g]} ;;" for g in range(sc.gpus)) + " esac")
    lines.append("  F_index=$i; F_timestamp=$(date '+%Y/%m/%d %H:%M:%S.000')")
    lines.append("  F_clocks_throttle_reasons_active=$F_clocks_event_reasons_active")
    lines.append("  o=; for f in $fl; do n=F_$(printf %s \"$f\" | tr -c 'A-Za-z0-9' '_'); eval \"v=\\${$n}\"; "
                 "o=\"$o, $v\"; done; printf '%s\\n' \"${o#, }\"")
    lines.append("}")
    lines.append("rc=0")
    for g in range(sc.gpus):
        if g in sc.vanish:
            lines.append(f'if [ "$t" -ge {sc.vanish[g]} ]; then rc=15; else gpu {g}; fi')
        else:
            lines.append(f"gpu {g}")
    lines.append('exit "$rc"')
    return "\n".join(lines) + "\n"


def gpu_burn_shim(sc: Scenario) -> str:
    die = sc.gpu_burn_die_at if sc.gpu_burn_die_at is not None else -1
    return f"""#!/bin/sh
# burn-in test shim: gpu_burn [args] SECONDS (writes nothing; sleeps and reports progress)
for a in "$@"; do d=$a; done
i=0
echo "Burning for $d seconds."
while [ "$i" -lt "$d" ]; do
  sleep 1; i=$((i + 1))
  if [ "$i" -eq {die} ]; then echo "Couldn't init a GPU test: CUDA error 999 (unknown error)"; exit 1; fi
  echo "$((i * 100 / d)).0%  proc'd: $((i * 1000)) (55000 Gflop/s)   errors: 0   temps: 62 C"
done
echo "Tested {sc.gpus} GPUs:"
echo "	GPU 0: OK"
exit 0
"""


def dcgmi_shim(sc: Scenario) -> str:
    d = sc.dcgmi or {}
    js = json.dumps(d.get("json", {}), indent=2)
    later = ""
    if "json_later" in d:  # from second 2 of the burn-in on (a later run of a repeated load), this answer
        later = ('t0=${NG_BURNIN_T0:-0}; if [ $(($(date +%s) - t0)) -ge 2 ]; then cat <<\'NGJSON\'\n'
                 f'{json.dumps(d["json_later"], indent=2)}\nNGJSON\nexit {int(d.get("rc", 0))}\nfi\n')
    return f"""#!/bin/sh
# burn-in test shim: dcgmi diag -r N -j (sleeps, then prints recorded JSON)
case "$*" in diag*) ;; *) echo "shim: unsupported: $*" >&2; exit 2 ;; esac
trap 'echo "Received signal, stopping diagnostic" >&2; exit 130' INT
i=0; while [ "$i" -lt {int(d.get('seconds', 3))} ]; do sleep 1; i=$((i + 1)); done
{later}cat <<'NGJSON'
{js}
NGJSON
exit {int(d.get('rc', 0))}
"""


def dmesg_shim(sc: Scenario) -> str:
    out = ["#!/bin/sh", "# burn-in test shim: dmesg", 't0=${NG_BURNIN_T0:-0}; now=$(date +%s)',
           'if [ "$t0" -gt 0 ]; then t=$((now - t0)); else t=0; fi']
    for ln in sc.klog_base:
        out.append(f"printf '%s\\n' {shlex.quote(ln)}")
    for at, ln in sc.klog_new:
        out.append(f'[ "$t" -ge {at} ] && printf "%s\\n" {shlex.quote(ln)}')
    out.append("exit 0")
    return "\n".join(out) + "\n"


def write_shims(d: Path, sc: Scenario) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    files = {"nvidia-smi": smi_shim(sc)}
    if sc.gpu_burn:
        files["gpu_burn"] = gpu_burn_shim(sc)
    if sc.dcgmi is not None:
        files["dcgmi"] = dcgmi_shim(sc)
    if sc.dmesg:
        files["dmesg"] = dmesg_shim(sc)
    for name, text in files.items():
        p = d / name
        p.write_text(text)
        p.chmod(0o755)
    return d
