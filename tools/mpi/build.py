"""Compile the stand-ins (once per test run) and say what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NCCL_NAMES = ("all_reduce_perf", "alltoall_perf")
PERFTEST_NAMES = ("ib_write_bw", "ib_write_lat")


def mpi_unavailable() -> str | None:
    """None when Open MPI can build and run the shims here, else what to install."""
    missing = [t for t, pkg in (("mpicc", "libopenmpi-dev"), ("mpirun", "openmpi-bin"), ("orted", "openmpi-bin"),
                                ("cc", "gcc")) if shutil.which(t) is None]
    if missing:
        pkgs = sorted({{"mpicc": "libopenmpi-dev", "cc": "gcc"}.get(t, "openmpi-bin") for t in missing})
        return f"not installed: {', '.join(missing)} (apt-get install {' '.join(pkgs)})"
    return None


@dataclass
class Shims:
    dir: Path

    def path(self, name: str) -> Path:
        return self.dir / name


def build_shims(out: Path) -> Shims:
    """Compile into ``out`` (created): the four tool names, hard links of two binaries.
    RuntimeError with the compiler's message when a build fails."""
    out.mkdir(parents=True, exist_ok=True)
    nccl, perf = out / "nccl_tests_shim", out / "perftest_shim"
    for argv, dst in ((["mpicc", "-O2", "-o", str(nccl), str(HERE / "nccl_tests_shim.c"), "-lm"], nccl),
                      (["cc", "-O2", "-o", str(perf), str(HERE / "perftest_shim.c")], perf)):
        if dst.exists():
            continue
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])} failed: {r.stderr[-2000:]}")
    for names, src in ((NCCL_NAMES, nccl), (PERFTEST_NAMES, perf)):
        for n in names:
            dst = out / n
            if not dst.exists():
                os.link(src, dst)
    return Shims(out)
