"""The typed model of a performance measurement (pure data; no imports from other layers).

A ``Measurement`` is one figure for one subject: a GPU (``scope="gpu"``), an ordered GPU pair
(``scope="link"``: ``gpu`` -> ``peer`` as the tool's matrix names them), an HCA (``scope="hca"``)
or the whole node (``scope="node"``, e.g. in-node all-reduce). Figures are only ever compared
with figures of the same ``kind`` (tool, metric, unit, engine, direction): a copy-engine figure
is never compared with an SM one, nor one-way with bidirectional (nvbandwidth reports the two
directions of a bidirectional test summed; ../shared/spec/perf-floors.md "Traps").
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Tools and their bundle keys (docs/bundle.md "Performance"). ib_write_bw may be per HCA.
TOOLS = ("nvbandwidth", "nccl", "dcgmi", "gpu_burn", "ib_write_bw", "builtin", "command")

SCOPES = ("gpu", "link", "hca", "node")


@dataclass(frozen=True)
class Measurement:
    """One figure. ``value`` in ``unit`` (GB/s = 10^9 bytes/s as nvbandwidth and nccl-tests
    print it; Gb/s for ib_write_bw; TFLOPS; Gflop/s for gpu_burn). ``higher_is_better`` is False
    only for latencies. ``engine``: ``ce`` (copy engine), ``sm`` (kernel copies) or ``""``;
    ``direction``: ``uni`` or ``bidir``. ``source``: the tool's own test name and size."""

    tool: str
    metric: str
    value: float
    unit: str
    scope: str = "gpu"
    gpu: int | None = None
    peer: int | None = None
    hca: str | None = None
    engine: str = ""
    direction: str = "uni"
    higher_is_better: bool = True
    source: str = ""

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
    def kind(self) -> tuple[str, str, str, str, str]:
        """Figures are comparable only within one kind."""
        return (self.tool, self.metric, self.unit, self.engine, self.direction)

    @property
    def label(self) -> str:
        """Human name of the metric: 'host-to-device (copy engine, GB/s)'."""
        eng = {"ce": "copy engine", "sm": "SM"}.get(self.engine, "")
        bits = [b for b in (eng, "bidirectional" if self.direction == "bidir" else "", self.unit) if b]
        return f"{METRIC_NAMES.get(self.metric, self.metric)} ({', '.join(bits)})"


#: Field terms for the metrics nodegate knows (others print as their own name).
METRIC_NAMES = {
    "h2d": "host-to-device", "d2h": "device-to-host", "p2p_read": "device-to-device read",
    "p2p_write": "device-to-device write", "p2p": "device-to-device copy", "local_copy": "device-local copy",
    "allreduce_busbw": "all-reduce bus bandwidth at the plateau", "busbw": "bus bandwidth at the plateau",
    "gemm_bf16": "bf16 GEMM", "gflops": "gpu_burn throughput", "ib_write_bw": "ib_write_bw loopback",
    "hbm_bw": "HBM bandwidth",
}


@dataclass(frozen=True)
class DataError:
    """Data corruption a tool reported (nccl-tests #wrong, gpu_burn errors, nvbandwidth pattern
    check): FAIL whatever the bandwidth. ``gpu`` None = the tool could not say which GPU."""

    tool: str
    what: str
    gpu: int | None = None


@dataclass(frozen=True)
class StatusResult:
    """A pass/fail verdict a tool printed itself (dcgmi diag per GPU and test; gpu_burn OK/FAULTY)."""

    tool: str
    gpu: int
    test: str
    status: str          # pass | fail | warn | skip | not run
    messages: tuple[str, ...] = ()


@dataclass
class ToolReport:
    """Everything one tool's output says, in the model.

    ``invalid``: reasons the output cannot be judged at all (inconsistent, incomplete, the tool
    failed) -> ERROR. ``waived``: tests the tool itself did not run (nvbandwidth "Waived") -> SKIP.
    ``notes``: caveats shown with the items (e.g. "no #wrong column: correctness unverified").
    """

    tool: str
    measurements: list[Measurement] = field(default_factory=list)
    errors: list[DataError] = field(default_factory=list)
    statuses: list[StatusResult] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    waived: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
