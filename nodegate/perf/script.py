"""The performance script: render it for one node (``render``), and split its framed output
(the splitter both phases share: same framing, heartbeats and events; nodegate.phase.script.split).

Every spec value reaching the node is shell-quoted; ``{gpus}`` in nccl arguments becomes the
node's GPU count (``nvidia-smi -L``) at run time.
"""

from __future__ import annotations

import shlex
from importlib import resources

from ..phase import script as P
from ..phase.script import Stream, split  # noqa: F401 - re-exported: the perf stream is framed alike
from .spec import PERFTEST_TESTS, PerfSpec

#: Per-tool output cap on the node, bytes (nvbandwidth/nccl outputs are tens of kB; gpu_burn's
#: \r-joined progress ~60 kB a minute).
TOOL_CAP = 4 * 1024 * 1024

#: GPU state sampled during every test (validity.py reads it; tools/fleet/perf.py answers it).
STATE_FIELDS = ("index,pci.bus_id,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.gen.max,"
                "pcie.link.width.current,pcie.link.width.max,clocks.sm,power.draw,power.limit,temperature.gpu,"
                "utilization.gpu")
#: Seconds one nvidia-smi call (sample, compute apps) may take on the node before ``timeout`` ends it.
SAMPLE_TIMEOUT_S = 30
APPS_QUERY = "--query-compute-apps=gpu_bus_id,pid,process_name --format=csv,noheader"

BINARY_DEFAULT = {"nvbandwidth": "nvbandwidth", "nccl": "all_reduce_perf", "dcgmi": "dcgmi", "gpu_burn": "gpu_burn",
                  **{t: t for t in PERFTEST_TESTS}, "dcgmproftester": "dcgmproftester12"}


def template() -> str:
    """perf.sh with the shared prelude (nodegate/phase/prelude.sh) spliced in."""
    return P.template(__package__, "perf.sh")


def builtin_source() -> str:
    return resources.files(__package__).joinpath("builtin_bench.py").read_text()


def _q(word: str) -> str:
    """Shell-quote one argument; ``{gpus}`` stays a live ``$NG_GPUS``."""
    parts = word.split("{gpus}")
    return '"$NG_GPUS"'.join(shlex.quote(p) if p else "" for p in parts) or "''"


def binary(spec: PerfSpec, tool: str) -> str:
    return spec.tools.get(tool, BINARY_DEFAULT[tool])


def commands(spec: PerfSpec) -> list[tuple[str, str, str]]:
    """``[(key, binary to check, shell command)]`` per test except the perftest tools (per HCA, on the node)."""
    pre = " ".join(shlex.quote(w) for w in spec.prefix)
    pre = pre + " " if pre else ""
    out = []
    for t in spec.tests:
        if t == "nvbandwidth":
            b = binary(spec, t)
            out.append(("perf.nvbandwidth", b, pre + " ".join([shlex.quote(b)] + [_q(a) for a in spec.nvbandwidth_args])))
        elif t == "nccl":
            b = binary(spec, t)
            out.append(("perf.nccl", b, pre + " ".join([shlex.quote(b)] + [_q(a) for a in spec.nccl_args])))
        elif t == "dcgmi":
            b = binary(spec, t)
            out.append(("perf.dcgmi", b, f"{pre}{shlex.quote(b)} diag -r {int(spec.dcgm_level)} -j"))
        elif t == "gpu_burn":
            b = binary(spec, t)
            out.append(("perf.gpu_burn", b, pre + " ".join([shlex.quote(b)] + [_q(a) for a in spec.gpu_burn_args]
                                                          + [str(int(spec.gpu_burn_seconds))])))
        elif t == "dcgmproftester":
            b = binary(spec, t)
            for tid in dict.fromkeys(spec.dcgmproftester_tests):
                out.append((f"perf.dcgmproftester.t{int(tid)}", b, pre + " ".join(
                    [shlex.quote(b)] + [_q(a) for a in spec.dcgmproftester_args] + ["-t", str(int(tid))])))
        elif t == "builtin":
            out.append(("perf.builtin", spec.python, f"{pre}{shlex.quote(spec.python)} -c "
                        f"{shlex.quote(builtin_source())} {float(spec.builtin_seconds)}"))
        elif t == "command":
            cmd = spec.command or "echo 'perf.tests lists command but perf.command is not set' >&2; exit 127"
            out.append(("perf.command", "sh", f"{pre}sh -c {shlex.quote(cmd)}"))
    return out


def render(spec: PerfSpec, *, marker: str | None = None) -> tuple[str, str]:
    """Return ``(script, marker)``."""
    lines = []
    for t in spec.tests:
        if t in PERFTEST_TESTS:
            args = " ".join(_q(a) for a in (spec.ib_write_bw_args if t.endswith("_bw") else spec.ib_lat_args))
            lines.append(f"ng_ib_tests {shlex.quote(binary(spec, t))} {int(spec.timeout_s)} {shlex.quote(args)} "
                         f"{1 if spec.ib_use_cuda else 0} {t}")
        else:
            for key, b, cmd in commands(spec):
                if key == f"perf.{t}" or key.startswith(f"perf.{t}."):
                    lines.append(f"ng_test {key} {shlex.quote(b)} {int(spec.timeout_s)} {shlex.quote(cmd)}")
    bins = " ".join(shlex.quote(binary(spec, t)) for t in spec.tests if t in BINARY_DEFAULT)
    fields = {"STATE_FIELDS": STATE_FIELDS, "APPS_QUERY": APPS_QUERY, "INTERVAL": str(int(spec.interval_s)),
              "KILL": str(int(spec.stop_grace_s)), "TIMEOUT": str(SAMPLE_TIMEOUT_S),
              "CAP": str(TOOL_CAP), "PREFIX": shlex.quote(" ".join(shlex.quote(w) for w in spec.prefix)),
              "HCAS": shlex.quote(" ".join(spec.ib_hcas or [])), "BINARIES": bins or "true",
              "TESTS": "\n".join(lines) or ":"}
    return P.render(template(), fields, marker)


def deadline_s(spec: PerfSpec, n_hcas: int = 8) -> float:
    """Controller-side deadline for the whole exec: every test's deadline and stop signals, plus
    set-up, with margin (ib_write_bw counts per HCA: ``n_hcas``)."""
    n = sum(n_hcas if t in PERFTEST_TESTS else len(set(spec.dcgmproftester_tests)) if t == "dcgmproftester" else 1
            for t in spec.tests)
    return n * (spec.timeout_s + 3 * spec.stop_grace_s + 2 * spec.interval_s + 10) + 120
