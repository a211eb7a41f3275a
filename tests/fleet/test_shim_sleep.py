"""The fleet shims' run time (tools/fleet/rootfs.py, shim.c): an Invocation with ``sleep`` answers
after N seconds, or after its last argument's seconds (``"arg"``: gpu_burn's duration), sleeping
without using CPU, in both the compiled shim and the ``#!/bin/sh`` one. Run outside a chroot: the
C shim compiled against a temporary data directory, the sh shim with its ``D=`` line pointed there."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tools.fleet.render import Invocation, ToolTable
from tools.fleet.rootfs import SHIM_DATA, SHIM_SOURCE, shim_script


def _data(tmp: Path, name: str, table: ToolTable) -> Path:
    """What add_shims writes under SHIM_DATA, written under ``tmp``."""
    d = tmp / "data" / name
    d.mkdir(parents=True)
    (d / "cases").write_text("".join(f"{i}\t{k}\n" for i, k in enumerate(table.cases, start=1)))
    for i, inv in [(0, table.default)] + list(enumerate(table.cases.values(), start=1)):
        (d / f"{i}.rc").write_text(f"{inv.rc}\n")
        if inv.out:
            (d / f"{i}.out").write_text(inv.out)
        if inv.sleep is not None:
            (d / f"{i}.sleep").write_text(f"{inv.sleep}\n")
    return tmp / "data"


def _shims(tmp: Path, name: str, table: ToolTable) -> list[Path]:
    data = _data(tmp, name, table)
    out = []
    sh = tmp / "sh" / name
    sh.parent.mkdir()
    sh.write_text(shim_script(name, table).replace(f"D={SHIM_DATA}/{name}", f"D={data}/{name}"))
    sh.chmod(0o755)
    out.append(sh)
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is not None:
        c = tmp / "c" / name
        c.parent.mkdir()
        subprocess.run([cc, "-O2", f'-DDATA="{data}/"', "-o", str(c), str(SHIM_SOURCE)], check=True)
        out.append(c)
    return out


def _timed(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep(1) for the sh shim")
def test_shims_sleep_for_their_time_or_their_last_argument(tmp_path):
    table = ToolTable("/usr/local/bin/tool", {"burn *": Invocation(out="burnt\n", sleep="arg"),
                                              "fixed": Invocation(out="fixed\n", sleep=0.6),
                                              "now": Invocation(out="now\n")})
    for shim in _shims(tmp_path, "tool", table):
        wall, cpu, r = _timed([str(shim), "burn", "-tc", "1"])
        assert r.stdout == "burnt\n" and r.returncode == 0, shim
        assert 0.95 <= wall < 5 and cpu < 0.5, (shim, wall, cpu)     # slept, did not spin
        wall, _, r = _timed([str(shim), "fixed"])
        assert r.stdout == "fixed\n" and 0.55 <= wall < 5, (shim, wall)
        wall, _, r = _timed([str(shim), "now"])
        assert r.stdout == "now\n" and wall < 0.5, (shim, wall)
