"""The ``nodegate: crossnode:`` section of the spec: the cross-node phase's settings, the site's
expected cabling, and floor overrides (docs/crossnode.md has the table).

Mounted on ``nodegate.spec.model.Spec`` as ``crossnode: Optional[CrossnodeSpec] = None``. Per
host (an inventory's host vars): ``cables`` (this node's HCA -> switch:port, rail) and
``domain``; for the whole phase (``all`` vars): the rest. Every value that reaches a command
line is checked against a safe alphabet here (HCA names, binaries, partitions, environment
names); commands are lists of words, never shell strings.
"""

from __future__ import annotations

import re
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_HCA = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_NAME = re.compile(r"^[A-Za-z0-9_.:;/@+ -]{1,128}$")   # switch names: node descriptions ("MF0;leaf-r0:MQM9700/U1")
_BINARY = re.compile(r"^[A-Za-z0-9_./+-]{1,255}$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SIZE = re.compile(r"^\d{1,12}[KMG]?$")
_PARTITION = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CableSpec(_Section):
    """One planned cable: this node's ``hca`` port ``port`` to ``switch`` port ``switch_port``
    (the switch by its node description, ibdiagnet system name, or GUID ``0x...``), on ``rail``."""

    hca: str
    port: int = Field(1, ge=1, le=255)
    switch: str
    switch_port: int = Field(..., ge=1, le=4096)
    rail: Optional[int] = Field(None, ge=0, le=63)

    @field_validator("hca")
    @classmethod
    def _hca(cls, v):
        if not _HCA.match(v):
            raise ValueError(f"HCA name {v!r} is not a device name (mlx5_0)")
        return v

    @field_validator("switch")
    @classmethod
    def _switch(cls, v):
        if not _NAME.match(v):
            raise ValueError(f"switch name {v!r} holds characters no switch description has")
        return v


class FloorsSpec(_Section):
    """Site floors: each one replaces the SKU x fabric profile's figure, and the rule then names
    this spec key as its source."""

    all_reduce_busbw_gbs: Optional[float] = Field(None, gt=0)
    all_reduce_split_busbw_gbs: Optional[float] = Field(None, gt=0)
    alltoall_busbw_gbs: Optional[float] = Field(None, gt=0)
    ib_write_bw_fraction: Optional[float] = Field(None, gt=0, le=1)
    ib_write_lat_p99_us: Optional[float] = Field(None, gt=0)


class CrossnodeSpec(_Section):
    # -- the fabric and its plan
    fabric: Optional[str] = Field(None, description="fabric profile (nodegate/data/crossnode_floors.yaml): ib-ndr400 ...")
    domain: Optional[str] = Field(None, description="this node's rack, leaf or NVLink domain (screened together)")
    cables: list[CableSpec] = Field([], description="this node's planned cables")
    rails: dict[int, Union[str, list[str]]] = Field({}, description="rail -> the leaf switch(es) HCA <rail> must reach")
    cable_plan: Optional[str] = Field(None, description="a YAML file {node: [cable...]} for the whole site")
    topology_file: Optional[str] = Field(None, description="the expected fabric, ibnetdiscover format")
    # -- launching
    launcher: Literal["mpirun", "srun", "mpijob"] = "mpirun"
    mpirun: str = Field("mpirun", description="the mpirun binary on the launching host (HPC-X's full path; '' = PATH's)")
    mpi: Literal["pmix", "pmi2"] = Field("pmix", description="srun --mpi=")
    partition: Optional[str] = None
    ranks_per_node: Optional[int] = Field(None, ge=1, le=64, description="processes (GPUs) per node; None: the node's GPUs")
    nccl_tests_dir: str = Field("", description="directory of all_reduce_perf/alltoall_perf on the nodes ('' = PATH)")
    perftest_dir: str = Field("", description="directory of ib_write_bw/ib_write_lat on the nodes ('' = PATH)")
    use_cuda: Optional[bool] = Field(None, description="perftest --use_cuda (None: when the node has GPUs)")
    nccl_json: bool = Field(False, description="nccl-tests -J (2.17.6+): the JSON file is printed after the run and judged")
    min_bytes: str = "1G"
    max_bytes: str = "8G"
    job_timeout_s: float = Field(240.0, gt=0, le=7200, description="per job (CRE: 4 min)")
    link_rounds: int = Field(3, ge=1, le=32)
    seed: int = 0
    mpirun_args: list[str] = []
    env: dict[str, str] = {}
    # -- thresholds
    floors: FloorsSpec = FloorsSpec()

    @field_validator("fabric", "domain", "partition")
    @classmethod
    def _word(cls, v):
        if v is not None and not _PARTITION.match(v):
            raise ValueError(f"{v!r}: letters, digits, '_', '.', '-' only")
        return v

    @field_validator("fabric")
    @classmethod
    def _known_fabric(cls, v):
        # a misspelt profile made every job of the run ERROR ("unknown fabric") only after the
        # whole phase had been launched; refused here, before any node is contacted. No fabric
        # at all stays allowed: its jobs are ERROR no-fabric-profile (docs/crossnode.md), fail closed
        if v is None:
            return v
        from .thresholds import floors_data
        known = sorted((floors_data().get("fabrics") or {}))
        if v not in known:
            raise ValueError(f"unknown fabric profile {v!r} (known: {', '.join(known)}; "
                             "nodegate/data/crossnode_floors.yaml)")
        return v

    @field_validator("nccl_tests_dir", "perftest_dir", "mpirun")
    @classmethod
    def _dir(cls, v):
        if v and not _BINARY.match(v):
            raise ValueError(f"directory {v!r} holds characters a path here may not have")
        return v

    @field_validator("min_bytes", "max_bytes")
    @classmethod
    def _size(cls, v):
        if not _SIZE.match(v):
            raise ValueError(f"size {v!r} is not nccl-tests' form (1G, 512M, 1073741824)")
        return v

    @model_validator(mode="after")
    def _sizes_in_order(self):
        # nccl-tests with -b above -e measures nothing: every job of the run would ERROR
        if size_bytes(self.min_bytes) > size_bytes(self.max_bytes):
            raise ValueError(f"min_bytes {self.min_bytes} is above max_bytes {self.max_bytes}")
        return self

    @field_validator("env")
    @classmethod
    def _env(cls, v):
        for k, val in v.items():
            if not _ENV.match(k):
                raise ValueError(f"environment name {k!r} is not one")
            if "\n" in val or "\x00" in val:
                raise ValueError(f"environment value of {k} holds a newline or NUL")
        return v

    @field_validator("mpirun_args")
    @classmethod
    def _args(cls, v):
        for a in v:
            if "\n" in a or "\x00" in a:
                raise ValueError("an mpirun argument holds a newline or NUL")
        return v

    @field_validator("rails")
    @classmethod
    def _rails(cls, v):
        for r, sw in v.items():
            for s in ([sw] if isinstance(sw, str) else sw):
                if not _NAME.match(s):
                    raise ValueError(f"rail {r}: switch name {s!r} holds characters no switch description has")
        return v


def size_bytes(s: str) -> int:
    """``1G`` -> 1073741824 (nccl-tests' suffixes are powers of 1024)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(s.rstrip("KMG")) * mult
