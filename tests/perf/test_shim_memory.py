"""The simulated perf tools remember their earlier runs (issue 36 item 9): an Invocation with ``seq``
answers its k-th call with ``seq[min(k, len - 1)]``, counting calls in a world-writable directory,
in both the compiled shim (tools/fleet/shim.c) and the ``#!/bin/sh`` one (tools/fleet/rootfs.py);
tools/fleet/perf.py renders a drifting node's runs as such a sequence (every figure x (1 + factor)^k).
Run outside a chroot: the data written by ``add_shims`` into a temporary root, the C shim compiled
against it (-DDATA, -DRUNS), the sh shim with its paths pointed there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nodegate.perf.extract import extract
from tools.fleet.perf import DRIFT_RUNS
from tools.fleet.perf_profiles import load_perf_profiles
from tools.fleet.render import Invocation, ToolTable, render_node
from tools.fleet.rootfs import RUNS, SHIM_DATA, SHIM_SOURCE, add_shims, shim_script
from tools.fleet.tree import Tree, write_tree


def _root(tmp: Path, name: str, table: ToolTable) -> Path:
    tree = Tree({})
    add_shims(tree, {name: table}, SHIM_SOURCE)     # as with a compiled shim: the cases file written too
    root = tmp / "root"
    root.mkdir(parents=True)
    write_tree(tree, root)
    return root


def _shims(tmp: Path, name: str, table: ToolTable) -> list[list[str]]:
    root = _root(tmp, name, table)
    data, runs = f"{root}{SHIM_DATA}", f"{root}{RUNS}"
    sh = tmp / f"{name}.sh"
    sh.write_text(shim_script(name, table).replace(f"D={SHIM_DATA}/{name}", f"D={data}/{name}")
                  .replace(f"c={RUNS}/", f"c={runs}/"))
    sh.chmod(0o755)
    out = [[str(sh)]]
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is not None:
        c = tmp / "c" / name
        c.parent.mkdir()
        subprocess.run([cc, "-O2", f'-DDATA="{data}/"', f'-DRUNS="{runs}/"', "-o", str(c), str(SHIM_SOURCE)], check=True)
        out.append([str(c)])
    return out


def test_a_sequence_answers_each_call_in_turn_then_repeats_the_last(tmp_path):
    table = ToolTable("/usr/local/bin/tool", {"run *": Invocation(seq=("first\n", "second\n", "third\n"))})
    for argv in _shims(tmp_path / "s", "tool", table):
        got = [subprocess.run(argv + ["run", "x"], capture_output=True, text=True, timeout=30).stdout for _ in range(5)]
        assert got == ["first\n", "second\n", "third\n", "third\n", "third\n"], argv
        # the next shim kind starts counting again
        for f in (tmp_path / "s" / "root" / RUNS.lstrip("/")).iterdir():
            f.unlink()
    assert (tmp_path / "s" / "root" / RUNS.lstrip("/")).stat().st_mode & 0o1777 == 0o1777   # sticky, world-writable


def test_a_plain_invocation_has_no_memory(tmp_path):
    table = ToolTable("/usr/local/bin/tool", {"run *": Invocation(out="same\n")})
    for argv in _shims(tmp_path, "tool", table):
        assert {subprocess.run(argv + ["run", "y"], capture_output=True, text=True, timeout=30).stdout
                for _ in range(3)} == {"same\n"}


@pytest.mark.parametrize("tool,parse_tool,key", [("nvbandwidth", "nvbandwidth", None),
                                                 ("gpu_burn", "gpu_burn", None),
                                                 ("ib_write_bw", "ib_write_bw", "-d mlx5_0 *")])
def test_the_drifting_profile_lowers_every_figure_run_after_run(tool, parse_tool, key):
    prof = load_perf_profiles()["perf-drift"]
    r = render_node(prof)
    inv = r.tools[tool].cases[key] if key else r.tools[tool].default
    # perftest runs twice a run (server and client, nodegate/perf/perf.sh ng_ib_tests): both answer run k
    calls = 2 if tool.startswith("ib_") else 1
    assert len(inv.seq) == DRIFT_RUNS * calls and inv.out == inv.seq[0]
    assert all(inv.seq[k] == inv.seq[k - k % calls] for k in range(len(inv.seq)))
    first = [m.value for m in extract(parse_tool, inv.seq[0], hca="mlx5_0").measurements]
    third = [m.value for m in extract(parse_tool, inv.seq[2 * calls], hca="mlx5_0").measurements]
    assert first and all(abs(b / a - 0.97 ** 2) < 0.003 for a, b in zip(first, third))


def test_healthy_profiles_answer_without_a_sequence():
    r = render_node(load_perf_profiles()["perf-healthy"])
    assert not r.tools["nvbandwidth"].default.seq and not r.tools["ib_write_bw"].cases["-d mlx5_0 *"].seq
