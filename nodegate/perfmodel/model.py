"""The typed model of a performance measurement (pure data; no imports from other layers).

A ``Measurement`` is one figure for one subject: a GPU (``scope="gpu"``), an ordered GPU pair
(``scope="link"``: ``gpu`` -> ``peer`` as the tool's matrix names them), an HCA (``scope="hca"``)
or the whole node (``scope="node"``, e.g. in-node all-reduce). Figures are only ever compared
with figures of the same ``kind`` (tool, metric, unit, engine, direction, mode): a copy-engine
figure is never compared with an SM one, one-way with bidirectional (nvbandwidth reports the two
directions of a bidirectional test summed, perftest ``-b`` the sum of both sides: perftest
print_full_bw_report), nor an in-place collective with an out-of-place one
(../shared/spec/perf-floors.md "Traps").

A subject the tool names but did not measure (a GPU whose gpu_burn never computed or died, a
single-rank collective, a matrix cell of ``nan``) is a Measurement with ``value`` None and ``why``
saying so: it is ERROR "not measured: ..." / "invalid figure ...", never a figure a rule could
pass, and never a peer of another subject (issue 36 item 1, issue 37 item 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Tools and their bundle keys (docs/bundle.md "Performance"). The perftest tools run per HCA.
PERFTEST = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
TOOLS = ("nvbandwidth", "nccl", "dcgmi", "gpu_burn", *PERFTEST, "dcgmproftester", "builtin", "command")

SCOPES = ("gpu", "link", "hca", "node")


@dataclass(frozen=True)
class Measurement:
    """One figure. ``value`` in ``unit`` (GB/s = 10^9 bytes/s as nvbandwidth and nccl-tests
    print it; Gb/s for perftest bandwidth; usec for perftest latency; TFLOPS; Gflop/s for
    gpu_burn), or None with ``why`` (not measured / invalid figure). ``higher_is_better`` is
    False only for latencies. ``engine``: ``ce`` (copy engine), ``sm`` (kernel copies) or ``""``;
    ``direction``: ``uni`` or ``bidir``; ``mode``: ``oop``/``ip`` for a collective's out-of-place
    and in-place halves, ``typical``/``p99`` for a latency, else ``""``. ``source``: the tool's
    own test name and size. ``samples``: the rows ``value`` is the median of (repeated sizes,
    progress records); ``unstable``: why those rows cannot give one figure (contradictory,
    bimodal) -> ERROR; ``note``: a caveat shown with the verdict."""

    tool: str
    metric: str
    value: float | None
    unit: str
    scope: str = "gpu"
    gpu: int | None = None
    peer: int | None = None
    hca: str | None = None
    engine: str = ""
    direction: str = "uni"
    higher_is_better: bool = True
    source: str = ""
    mode: str = ""
    why: str = ""
    samples: tuple = ()
    unstable: str = ""
    note: str = ""

    @property
    def subject(self) -> str:
        """``gpu3``, ``gpu0-gpu5``, ``hca-mlx5_0`` or ``node``: stable, used in item ids."""
        if self.scope == "gpu":
            return f"gpu{self.gpu}"
        if self.scope == "link":
            return f"gpu{self.gpu}-gpu{self.peer}"
        if self.scope == "hca":
            return f"hca-{self.hca}"
        return "node"

    @property
    def kind(self) -> tuple[str, str, str, str, str, str]:
        """Figures are comparable only within one kind."""
        return (self.tool, self.metric, self.unit, self.engine, self.direction, self.mode)

    @property
    def measured(self) -> bool:
        return self.value is not None

    @property
    def label(self) -> str:
        """Human name of the metric: 'host-to-device (copy engine, GB/s)'."""
        eng = {"ce": "copy engine", "sm": "SM"}.get(self.engine, "")
        mode = MODE_NAMES.get(self.mode, self.mode)
        bits = [b for b in (eng, "bidirectional" if self.direction == "bidir" else "", mode, self.unit) if b]
        return f"{METRIC_NAMES.get(self.metric, self.metric)} ({', '.join(bits)})"


#: Field terms for the metrics nodegate knows (others print as their own name).
METRIC_NAMES = {
    "h2d": "host-to-device", "d2h": "device-to-host", "p2p_read": "device-to-device read",
    "p2p_write": "device-to-device write", "p2p": "device-to-device copy", "local_copy": "device-local copy",
    "allreduce_busbw": "all-reduce bus bandwidth at the plateau", "busbw": "bus bandwidth at the plateau",
    "allgather_busbw": "all-gather bus bandwidth at the plateau",
    "alltoall_busbw": "all-to-all bus bandwidth at the plateau",
    "reducescatter_busbw": "reduce-scatter bus bandwidth at the plateau",
    "broadcast_busbw": "broadcast bus bandwidth at the plateau", "reduce_busbw": "reduce bus bandwidth at the plateau",
    "sendrecv_busbw": "send/receive bus bandwidth at the plateau",
    "gemm_bf16": "bf16 GEMM", "gflops": "gpu_burn throughput", "hbm_bw": "HBM bandwidth",
    "ib_write_bw": "RDMA write bandwidth", "ib_read_bw": "RDMA read bandwidth", "ib_send_bw": "RDMA send bandwidth",
    "ib_write_lat": "RDMA write latency", "ib_read_lat": "RDMA read latency", "ib_send_lat": "RDMA send latency",
    "tensor": "tensor-core throughput (dcgmproftester -t 1004)", "fp64": "FP64 throughput (dcgmproftester -t 1006)",
    "fp32": "FP32 throughput (dcgmproftester -t 1007)", "fp16": "FP16 throughput (dcgmproftester -t 1008)",
}
MODE_NAMES = {"oop": "out-of-place", "ip": "in-place", "typical": "typical", "p99": "99th percentile"}


@dataclass(frozen=True)
class Integrity:
    """A tool's own data check for a subject (nccl-tests #wrong / out-of-bounds, gpu_burn's error
    count and FAULTY, nvbandwidth's pattern check, the built-in copy check): judged whether or
    not a throughput floor exists (issue 36 item 2). ``ok`` True = checked, clean (PASS); False =
    corruption (FAIL); None = not checked for this subject (the run never got that far: ERROR).
    ``gpu`` None = the node (the tool could not say which GPU)."""

    tool: str
    ok: bool | None
    what: str
    gpu: int | None = None


#: Kept for callers of the first model (a reported corruption): an Integrity that failed.
def DataError(tool: str, what: str, gpu: int | None = None) -> Integrity:  # noqa: N802 - constructor alias
    return Integrity(tool, False, what, gpu)


@dataclass(frozen=True)
class StatusResult:
    """A pass/fail verdict a tool printed itself (dcgmi diag per GPU and test; gpu_burn OK/FAULTY).
    ``status``: pass | fail | warn | skip | not run | error (the tool's own test did not run:
    DCGM's internal error, a refused CPU affinity: ERROR, not FAIL)."""

    tool: str
    gpu: int
    test: str
    status: str
    messages: tuple[str, ...] = ()


@dataclass
class ToolReport:
    """Everything one tool's output says, in the model.

    ``invalid``: reasons the output cannot be judged at all (inconsistent, incomplete, the tool
    failed, two runs in one output) -> every figure ERROR. ``waived``: tests the tool itself did
    not run (nvbandwidth "Waived") -> SKIP. ``notes``: caveats shown with the items (e.g.
    "no #wrong column: correctness unverified"). ``problems``: node-level ERROR items that are
    not about one figure (e.g. "dcgmi diag ran no test").
    """

    tool: str
    measurements: list[Measurement] = field(default_factory=list)
    integrity: list[Integrity] = field(default_factory=list)
    statuses: list[StatusResult] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    waived: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    @property
    def errors(self) -> list[Integrity]:
        """The corruption the tool reported (integrity checks that failed)."""
        return [i for i in self.integrity if i.ok is False]
