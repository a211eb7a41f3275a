"""Issue 31 item 3: parsing time is linear and bounded. Every public parser (the enumeration of
tests/hostile/test_parser_properties.py: a parser added tomorrow is covered the day it lands) gets
worst-case lines for backtracking patterns (a long run of spaces before a non-space, of word
characters, of ``a `` pairs, of digits, of brackets) after the prefixes that engage its patterns,
and must finish each within a fixed CPU budget: a quadratic pattern on one such line takes minutes
to hours (the systemd argv pattern: 1 min 57 s on 100 KB), a linear parser milliseconds.

Budgets are CPU seconds of this process (time.process_time: load on the machine does not count),
with margins of 100x and more over what was measured (bench/parse_bounds.py prints the figures:
the slowest parser on a full 8 MiB line took 2.8 CPU s, the shlex argv split; the others ≤ 0.6 s)."""

from __future__ import annotations

import time

import pytest

from tests.hostile.test_parser_properties import FUNCS, _allowed, _call

#: one hostile line of the sweep (64 KiB: a quadratic pattern needs ~10^9 steps on it; the systemd
#: argv pattern took ~50 s on one, the budget below is 5 s and linear parsers take milliseconds)
SWEEP_CHARS = 64 * 1024
#: the full per-item cap (nodegate.probe.DEFAULT_ITEM_CAP): one line that long per parser
FULL_CHARS = 8 * 1024 * 1024
SWEEP_BUDGET_S = 5.0
FULL_BUDGET_S = 30.0

#: text a parser needs before a line is read for what it is (else it stops at the first line)
PRELUDE = {
    "ibstat.parse_ibstat": "CA 'mlx5_0'\n\tPort 1:\n",
    "nvlink_errors.parse_nvlink_errors": "GPU 0: NVIDIA H100 (UUID: GPU-1)\n",
    "nvlink_status.parse_nvlink_status": "GPU 0: NVIDIA H100 (UUID: GPU-1)\n",
    "smi_text.parse_smi_text": "GPU 00000000:19:00.0\n",
    "pci_aer.parse_pci_aer": "== 0000:19:00.0 gpu aer=3\n",
    "pci.parse_pci_sysfs": "== 0000:19:00.0 gpu\n",
    "systemd.parse_unit_files": "== /etc/systemd/system/nvidia-persistenced.service\n",
    "sysfs_lists.parse_gpus_information": "== /proc/driver/nvidia/gpus/0000:19:00.0/information\n",
    "smi_summary.parse_smi_summary": "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\n",
    "ib_ports.parse_ib_ports": "== mlx5_0 port 1\n",
    "lspci.parse_lspci_vvv": "19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n",
    "firmware.parse_firmware_gsp": "== /lib/firmware/nvidia/580.159.04\n",
}

#: prefixes that engage the patterns of each form (the start of the line the pattern reads)
PREFIXES = (
    "", "  ", "x: ", "ExecStart={ path=/x ; argv[]=", "   Loaded: loaded (", "   Main PID: ", "\t\tState:",
    "\t Link 0: Replay Errors:", "\t Link 0: ", "GPU 1: x (UUID: ", "index, power.draw [", "    Product Name : ",
    "|   0  NVIDIA H200", "| N/A   34C    P0 ", "[ 1.0] NVRM: API mismatch: the client has the version 1",
    "nvidia: module license '", "NVRM: Xid (PCI:", "\tLnkSta: Speed ", "nvidia/580, ", "-rw-r--r-- 1 0 0 ",
    "nv-fabricmanager[1]: ", "/sys/bus/pci/devices/0000:19:00.0/aer_dev_fatal:", "*** /x", "Driver Version: ",
)


def _fills(n: int) -> tuple[str, ...]:
    return (" " * n + "x", "a " * (n // 2) + ")", "a" * n + ":", "1" * n + " ", "[" * n, "x; " * (n // 3) + "=")


def _cpu(name: str, text: str) -> float:
    t0 = time.process_time()
    try:
        _call(name, FUNCS[name], text)
    except _allowed(name):
        pass
    return time.process_time() - t0


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_every_parser_is_linear_on_worst_case_lines(name):
    pre = PRELUDE.get(name, "")
    worst = (0.0, "")
    for prefix in PREFIXES:
        for fill in _fills(SWEEP_CHARS):
            dt = _cpu(name, pre + prefix + fill + "\n")
            if dt > worst[0]:
                worst = (dt, f"{prefix!r} + {fill[:12]!r}...")
    assert worst[0] < SWEEP_BUDGET_S, f"{name}: {worst[0]:.1f} CPU s on {worst[1]} ({SWEEP_CHARS} chars)"


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_every_parser_reads_a_full_cap_line_within_its_budget(name):
    dt = _cpu(name, PRELUDE.get(name, "") + "  " + " " * FULL_CHARS + "x\n")
    assert dt < FULL_BUDGET_S, f"{name}: {dt:.1f} CPU s on one {FULL_CHARS}-character line"
