"""Expected node state (the ``nodegate:`` inventory variable), SKU profiles and the Xid table.

Public API:
- ``load_spec(raw, source) -> Spec``: validate a raw mapping; raises ``SpecError`` naming the
  file (``source``), the dotted key and the reason.
- ``Spec`` and its sections (nodegate.spec.model).
- ``expectations(spec, gpu) -> GpuExpectation``: effective per-GPU expectations,
  spec override > SKU profile > catalog default (nodegate.spec.expect).
- ``sku_profile(device_id)`` / ``load_skus()`` (nodegate.spec.skus), ``xid_table()``
  (nodegate.spec.xid).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..errors import SpecError
from .expect import GpuExpectation, expectations
from .model import Spec
from .skus import SkuProfile, load_skus, sku_profile
from .xid import XidInfo, xid_fail_set, xid_table

__all__ = ["Spec", "load_spec", "GpuExpectation", "expectations", "SkuProfile", "load_skus",
           "sku_profile", "XidInfo", "xid_table", "xid_fail_set"]


def _dotted(loc: tuple) -> str:
    parts: list[str] = []
    for p in loc:
        # pydantic adds union member tags ("bool", "literal['auto']") to the location
        if isinstance(p, str) and (p in ("bool", "int", "str") or "[" in p or "'" in p):
            continue
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "<root>"


def load_spec(raw: dict | None, source: str = "<spec>") -> Spec:
    """Validate the ``nodegate:`` mapping. ``None`` / ``{}`` = all catalog defaults.

    Raises SpecError("<source>: nodegate.<dotted.key>: <reason>; ...") for a wrong key, type
    or value; never returns a partial spec.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: nodegate: expected a mapping, got {type(raw).__name__}")
    try:
        return Spec.model_validate(raw)
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            reason = "unknown key (not allowed)" if err["type"] == "extra_forbidden" else err["msg"]
            msgs.append(f"nodegate.{_dotted(err['loc'])}: {reason}")
        raise SpecError(f"{source}: " + "; ".join(msgs)) from None


def spec_or_default(spec: Any) -> Spec:
    """Checks accept ``None`` for the catalog defaults (unit tests, ad-hoc use)."""
    return spec if isinstance(spec, Spec) else load_spec(None)
