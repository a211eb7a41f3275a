"""The ``baseline:`` section of the node spec (pydantic v2, ``extra='forbid'``).

To be mounted by the spec owner as ``Spec.baseline: BaselineSpec = BaselineSpec()``
(nodegate/spec/model.py). Until it is, ``baseline_spec(spec)`` returns the defaults, so the
regression gate works with any Spec.

Every default names its source:
- ``allowed_ecc_growth.uncorrectable = 0``: checks.md "ECC and memory health" ("any
  uncorrectable > 0 FAIL"): a node accepted with N uncorrectable errors must not gain one.
- ``allowed_ecc_growth.correctable = None``: checks.md leaves correctable thresholds to the
  spec; growth is reported as a change, not enforced, unless set.
- ``allowed_remapped_rows_growth = 0``: NVIDIA "GPU Memory Error Management" (row remapping):
  every new remap consumed a spare row after an uncorrectable/correctable error; after an
  upgrade the count must not move.
- ``allowed_retired_pages_growth = 0``: the same for page retirement (pre-Ampere).
- ``xid_min_severity = critical``: nodegate/data/xid.yaml severities (NVIDIA Xid catalog).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

#: Regression kinds (one pytest item per node, and per GPU for GPU_KINDS); see model.KINDS.
KindName = Literal["node_presence", "checks", "pcie", "gpu_missing", "ecc", "remapped_rows", "xid", "flavor",
                   "persistence", "site"]
#: Kinds whose change the operator may declare as planned (then: change, not regression).
PlannableKind = Literal["flavor", "persistence"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EccGrowth(_Section):
    """Allowed growth of ECC totals between baseline and now, per scope (volatile and
    aggregate alike). ``None`` = not enforced (growth is reported as a change)."""

    uncorrectable: Optional[int] = Field(0, ge=0, description="allowed growth of uncorrectable totals")
    correctable: Optional[int] = Field(None, ge=0, description="allowed growth of correctable totals (None: report only)")


class BaselineSpec(_Section):
    """``nodegate: {baseline: {...}}``: how a node is compared with its last accepted state."""

    allowed_ecc_growth: EccGrowth = EccGrowth()
    allowed_remapped_rows_growth: int = Field(0, ge=0, description="allowed growth of remapped rows (corr+unc)")
    allowed_retired_pages_growth: int = Field(0, ge=0, description="allowed growth of retired pages (sbe+dbe)")
    xid_min_severity: Literal["critical", "major", "minor", "info"] = Field(
        "critical", description="new kernel-log Xids at or above this severity are regressions")
    planned: list[PlannableKind] = Field([], description="kinds the upgrade is meant to change (reported as changes)")
    ignore: list[KindName] = Field([], description="regression kinds not compared on this node (items SKIP)")


def baseline_spec(spec) -> BaselineSpec:
    """``spec.baseline`` when the Spec carries one (mounted section, or any object with that
    attribute), else the defaults above."""
    b = getattr(spec, "baseline", None)
    if isinstance(b, BaselineSpec):
        return b
    if isinstance(b, dict):
        return BaselineSpec.model_validate(b)
    return BaselineSpec()
