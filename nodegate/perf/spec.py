"""The ``nodegate: perf:`` section of the node spec (docs/perf.md has the table).

Mounted on ``nodegate.spec.model.Spec`` as ``perf: Optional[PerfSpec] = None``. Every value that
reaches the node is shell-quoted by the script renderer; binaries and HCA names are restricted
to a safe alphabet; the command prefix is a list of words (``docker run --rm --gpus all
--network host IMAGE``), never a shell string, except the site ``command`` (``sh -c``).
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..phase.spec import BINARY as _BINARY, check_command, load_section, section_spec

TestName = Literal["nvbandwidth", "nccl", "dcgmi", "gpu_burn", "ib_write_bw", "ib_read_bw", "ib_send_bw",
                   "ib_write_lat", "ib_read_lat", "ib_send_lat", "dcgmproftester", "builtin", "command"]
#: the perftest tools: a loopback pair per HCA each
PERFTEST_TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
TOOL_KEYS = ("nvbandwidth", "nccl", "dcgmi", "gpu_burn", *PERFTEST_TESTS, "dcgmproftester")
_HCA = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

#: nvbandwidth tests judged by default: host<->device copy engine and the device-to-device read
#: matrix (the Azure NHC check_gpu_bw set, ../shared/spec/perf-floors.md).
NVB_DEFAULT = ["-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"]
#: all_reduce over every GPU of the node up to 16 GiB (Azure NHC measures its floor at 16G).
NCCL_DEFAULT = ["-b", "1G", "-e", "16G", "-f", "2", "-g", "{gpus}"]
#: 8 MiB messages, Gb/s (Azure NHC and ngc_multinode_perf measure at 8 MiB with --report_gbits).
IB_DEFAULT = ["-s", "8388608", "-n", "5000", "--report_gbits", "-F"]
#: latency: perftest's default 2-byte message, 10000 iterations (prints typical and percentiles).
IB_LAT_DEFAULT = ["-s", "2", "-n", "10000", "-F"]
#: dcgmproftester: 15 s per test, DCGM's own validation off (it needs the host engine's profiling
#: module); DCGM 4.x prints FLOPS only with --cublas (NVIDIA/DCGM issue 239), 3.x has no such flag.
PROFTESTER_DEFAULT = ["--no-dcgm-validation", "-d", "15"]


class PerfThresholds(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # 0.90: the in-node peer cut-off of the issue; NHC's "warn below 1.05x floor" is not a FAIL.
    peer_ratio: float = Field(0.90, gt=0, le=1)
    # 5 %: SuperBench's fail band (superbenchmark baseline_generation.py).
    fleet_drop: float = Field(0.05, ge=0, lt=1)
    # 10 nodes: Azure's z-score outlier rule needs >= 10 nodes (perf-floors.md "Fleet rules").
    fleet_min_nodes: int = Field(10, ge=2)
    # 3.5: Iglewicz and Hoaglin's modified z-score outlier cut-off.
    fleet_z: float = Field(3.5, gt=0)
    # 5 %: the default regression margin.
    baseline_drop: float = Field(0.05, ge=0, lt=1)
    # 3: a median of fewer other subjects is no reference (issue 36 item 1: a relative rule needs
    # a minimum number of valid figures of OTHER subjects, else it does not apply and says so)
    min_peers: int = Field(3, ge=1, le=64)


class PerfSpec(BaseModel):
    """``nodegate: perf:`` (all keys optional). Units are in the names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[TestName] = Field(["nvbandwidth", "nccl"], description="tests to run, in this order")
    tools: dict[str, str] = Field({}, description="binary per tool: nvbandwidth, nccl (all_reduce_perf), dcgmi, "
                                  "gpu_burn, ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, "
                                  "ib_send_lat, dcgmproftester (dcgmproftester12); a name in PATH or a path")
    prefix: list[str] = Field([], description="words before every tool command, e.g. docker run --rm --gpus all "
                              "--network host IMAGE")
    python: str = Field("python3", description="interpreter for the built-in measurement (needs PyTorch)")
    command: Optional[str] = Field(None, description="site command (sh -c) printing perf JSON (docs/perf.md)")
    nvbandwidth_args: list[str] = Field(NVB_DEFAULT)
    nccl_args: list[str] = Field(NCCL_DEFAULT, description="'{gpus}' = the node's GPU count")
    dcgm_level: int = Field(3, ge=1, le=4, description="dcgmi diag -r <level> -j")
    gpu_burn_seconds: int = Field(60, ge=5, le=7200)
    gpu_burn_args: list[str] = Field([], description="before the duration, e.g. ['-tc']")
    ib_hcas: Optional[list[str]] = Field(None, description="HCAs for ib_write_bw loopback; none = every "
                                         "/sys/class/infiniband device")
    ib_write_bw_args: list[str] = Field(IB_DEFAULT, description="arguments of every perftest bandwidth tool")
    ib_lat_args: list[str] = Field(IB_LAT_DEFAULT, description="arguments of every perftest latency tool")
    dcgmproftester_tests: list[Literal[1004, 1006, 1007, 1008]] = Field(
        [1004, 1007], description="dcgmproftester test ids: 1004 tensor, 1006 FP64, 1007 FP32, 1008 FP16")
    dcgmproftester_args: list[str] = Field(PROFTESTER_DEFAULT, description="before -t <id>; add --cublas on DCGM 4.x")
    ib_use_cuda: bool = Field(False, description="GPU memory: --use_cuda=<gpu> (perftest built with CUDA)")
    builtin_seconds: float = Field(2.0, gt=0, le=60, description="time per built-in measurement")
    timeout_s: int = Field(900, ge=10, le=7200, description="deadline per test")
    interval_s: int = Field(2, ge=1, le=60, description="seconds between GPU state samples during a test")
    stop_grace_s: int = Field(5, ge=1, le=60)
    thresholds: PerfThresholds = PerfThresholds()
    floors: dict[str, float] = Field({}, description="floor overrides: metric[.engine[.direction]] -> value "
                                     "in the metric's unit (ib_write_bw in Gb/s)")

    @field_validator("tools")
    @classmethod
    def _tools(cls, v):
        for k, b in v.items():
            if k not in TOOL_KEYS:
                raise ValueError(f"perf.tools.{k}: unknown tool ({', '.join(TOOL_KEYS)})")
            if not _BINARY.match(b):
                raise ValueError(f"perf.tools.{k} {b!r}: a binary name or path (letters, digits, _./+-)")
        return v

    @field_validator("python")
    @classmethod
    def _python(cls, v):
        if not _BINARY.match(v):
            raise ValueError(f"perf.python {v!r}: an interpreter name or path")
        return v

    @field_validator("ib_hcas")
    @classmethod
    def _hcas(cls, v):
        for h in v or []:
            if not _HCA.match(h):
                raise ValueError(f"perf.ib_hcas: bad HCA name {h!r}")
        return v

    @field_validator("command")
    @classmethod
    def _command(cls, v):
        return check_command(v, "perf.command")

    @field_validator("floors")
    @classmethod
    def _floors(cls, v):
        # a NaN floor never fires (a comparison with NaN is false): every floor a finite figure > 0
        for k, x in v.items():
            if not (x == x and 0 < x < 1e15):
                raise ValueError(f"perf.floors.{k}: {x!r} is not a finite figure above 0")
            if not re.fullmatch(r"[A-Za-z0-9_]{1,40}(?:\.[A-Za-z0-9_]{1,20}){0,2}", k):
                raise ValueError(f"perf.floors: bad key {k!r} (metric[.engine[.direction]] or metric.mode)")
        return v

    @field_validator("prefix", "nvbandwidth_args", "nccl_args", "gpu_burn_args", "ib_write_bw_args", "ib_lat_args",
                     "dcgmproftester_args")
    @classmethod
    def _words(cls, v):
        if len(v) > 64 or any(len(w) > 1024 or "\x00" in w or "\n" in w for w in v):
            raise ValueError("at most 64 words of 1024 characters, no NUL or newline")
        return v


def load_perf_spec(raw: dict | None, source: str = "<spec>") -> PerfSpec:
    """Validate a raw ``perf:`` mapping; SpecError naming ``nodegate.perf.<key>``."""
    return load_section(PerfSpec, "perf", raw, source)


def perf_spec(spec, raw_spec: dict | None = None) -> PerfSpec:
    """The node's PerfSpec: ``spec.perf`` when mounted (None = defaults), else the raw mapping."""
    return section_spec(PerfSpec, "perf", spec, raw_spec)
