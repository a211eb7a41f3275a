"""The ``burnin:`` section of the node spec, and the ``--burn-in DURATION`` grammar.

The spec owner mounts ``BurninSpec`` on ``nodegate.spec.model.Spec`` as
``burnin: Optional[BurninSpec] = None``; ``burnin_spec(spec, raw)`` reads it (or validates the raw
``burnin:`` mapping while the section is not mounted yet). Link expectations under load come from
the normal ``pcie:`` section, Xids from ``kernel_log.xid_fail`` / nodegate/data/xid.yaml.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..phase.spec import BINARY as _BINARY, check_command, load_section, section_spec
from ..facts import CLOCKS_EVENT_BITS, check_clocks_reasons

#: checks.md "Clocks event reasons": the default fail set (NVML nvmlClocksEventReason* bits
#: 0x8, 0x40, 0x80, 0x20). SW power cap is healthy at full load and never in this set by default.
DEFAULT_FAIL_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")

_DURATION = re.compile(r"^\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s?)?\s*$")

#: Longest burn-in accepted (a typo such as 100h should not hold a fleet for days).
MAX_DURATION_S = 48 * 3600


def parse_duration(text: str | int | float) -> int:
    """``90``, ``90s``, ``10m``, ``2h``, ``1h30m`` -> seconds (int, 1..MAX_DURATION_S).

    Raises ValueError naming the accepted forms.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        s = int(text)
    else:
        m = _DURATION.match(str(text).lower())
        if not m or not any(m.groups()):
            raise ValueError(f"burn-in duration {text!r}: use e.g. 90s, 10m, 2h or 1h30m")
        h, mi, se = (int(g) if g else 0 for g in m.groups())
        s = h * 3600 + mi * 60 + se
    if not 1 <= s <= MAX_DURATION_S:
        raise ValueError(f"burn-in duration {text!r}: must be between 1s and {MAX_DURATION_S // 3600}h")
    return s


class BurninSpec(BaseModel):
    """``nodegate: burnin:`` (all keys optional). Units are in the names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # auto: first found wins in this order: dcgmi, the gpu_burn binary, the spec's command.
    load: Literal["auto", "dcgmi", "gpu-burn", "command"] = Field("auto", description="the load to run")
    command: Optional[str] = Field(None, description="shell command for load=command (sh -c); '{seconds}' "
                                   "is replaced by the duration; $NG_BURNIN_SECONDS holds it too")
    gpu_burn: str = Field("gpu_burn", description="gpu-burn binary (name in PATH or absolute path)")
    gpu_burn_args: list[str] = Field([], description="arguments before the duration, e.g. ['-tc']")
    # `dcgmi diag -r 3` = the "long" run level (DCGM user guide, "Run Levels").
    dcgm_level: int = Field(3, ge=1, le=4, description="dcgmi diag run level")
    # Warn means DCGM found something short of a failure; acceptance treats it as FAIL by default.
    dcgm_warn_fails: bool = Field(True, description="a DCGM 'Warn' result is a FAIL")
    # 5 s: several samples per minute at ~0.1 s nvidia-smi cost (capture timing.out: 26-47 ms per query).
    interval_s: int = Field(5, ge=1, le=300, description="seconds between samples")
    # None: FAIL when temperature.gpu.tlimit <= 0, i.e. at or past the GPU's Max Operating
    # temperature (nvidia-smi -q: "GPU Max Operating T.Limit Temp : 0 C").
    max_temperature_c: Optional[int] = Field(None, ge=20, le=120, description="GPU temperature limit under load")
    # catalog "ECC": any uncorrectable error FAILs; under load the same holds for growth.
    max_ecc_uncorrected_volatile_growth: int = Field(0, ge=0)
    # None: reported, not enforced (catalog: correctable thresholds are spec).
    max_ecc_corrected_volatile_growth: Optional[int] = Field(None, ge=0)
    # A remap during burn-in means a row failed under load (NVIDIA memory error management doc).
    max_remapped_rows_growth: int = Field(0, ge=0)
    fail_reasons: list[str] = Field(list(DEFAULT_FAIL_REASONS), description="clocks event reasons that FAIL")
    # None: kernel_log.xid_fail, else the Xid table's fail set.
    xid_fail: Optional[list[int]] = Field(None, description="Xids that FAIL when new during burn-in")
    # How long a load may run past the window before it is stopped (gpu_burn spends a few seconds
    # initialising before its own clock starts).
    grace_s: int = Field(30, ge=0, le=600)
    # None: max(2 * interval_s, 10): a load ending this long before the window's end "died early".
    early_exit_tolerance_s: Optional[int] = Field(None, ge=0)
    # TERM (INT first for dcgmi, whose handler stops the diag in nv-hostengine) then KILL after this.
    stop_grace_s: int = Field(10, ge=1, le=120)

    @field_validator("fail_reasons")
    @classmethod
    def _reasons(cls, v):
        return check_clocks_reasons(v)

    @field_validator("gpu_burn")
    @classmethod
    def _binary(cls, v):
        if not _BINARY.match(v):
            raise ValueError(f"burnin.gpu_burn {v!r}: a binary name or path (letters, digits, _./+-)")
        return v

    @field_validator("command")
    @classmethod
    def _command(cls, v):
        return check_command(v, "burnin.command")

    @model_validator(mode="after")
    def _command_needed(self):
        if self.load == "command" and not self.command:
            raise ValueError("burnin.load is 'command' but burnin.command is not set")
        return self

    @property
    def fail_mask(self) -> int:
        m = 0
        for r in self.fail_reasons:
            m |= CLOCKS_EVENT_BITS[r]
        return m

    @property
    def early_tolerance(self) -> int:
        return self.early_exit_tolerance_s if self.early_exit_tolerance_s is not None else max(2 * self.interval_s, 10)


def load_burnin_spec(raw: dict | None, source: str = "<spec>") -> BurninSpec:
    """Validate a raw ``burnin:`` mapping; SpecError naming ``nodegate.burnin.<key>``."""
    return load_section(BurninSpec, "burnin", raw, source)


def burnin_spec(spec, raw_spec: dict | None = None) -> BurninSpec:
    """The node's BurninSpec: ``spec.burnin`` when the section is mounted (None = defaults), else
    the raw ``burnin:`` mapping of the inventory (``raw_spec``) validated here."""
    return section_spec(BurninSpec, "burnin", spec, raw_spec)
