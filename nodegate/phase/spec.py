"""Spec-section helpers both second-exec phases share (``nodegate: burnin:`` and ``perf:``):
validating a raw section with its pydantic model and finding a node's section.
"""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import SpecError

M = TypeVar("M", bound=BaseModel)

#: A binary name or path the script runs (shell-quoted there too): letters, digits, _./+-.
BINARY = re.compile(r"^[A-Za-z0-9_./+-]{1,255}$")


def check_command(v: str | None, key: str) -> str | None:
    """A spec's shell command (``key``, e.g. ``burnin.command``): None, or non-empty, at most
    4096 characters, no NUL. Raises ValueError (pydantic reports it under the key)."""
    if v is not None and (not v.strip() or len(v) > 4096 or "\x00" in v):
        raise ValueError(f"{key} must be a non-empty shell command (at most 4096 characters)")
    return v


def load_section(model: type[M], section: str, raw: dict | None, source: str = "<spec>") -> M:
    """Validate a raw ``section:`` mapping with ``model`` (None = defaults); SpecError naming
    ``<source>: nodegate.<section>.<key>: <reason>`` for every problem."""
    if raw is None:
        return model()
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: nodegate.{section}: expected a mapping, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            loc = ".".join(str(p) for p in err["loc"])
            reason = "unknown key (not allowed)" if err["type"] == "extra_forbidden" else err["msg"]
            msgs.append(f"nodegate.{section}{'.' + loc if loc else ''}: {reason}")
        raise SpecError(f"{source}: " + "; ".join(msgs)) from None


def section_spec(model: type[M], section: str, spec, raw_spec: dict | None = None) -> M:
    """The node's section: ``spec.<section>`` when mounted (None = defaults), else the raw
    ``<section>:`` mapping of the inventory (``raw_spec``) validated here (SpecError)."""
    v = getattr(spec, section, None) if spec is not None else None
    if isinstance(v, model):
        return v
    if isinstance(v, dict):
        return load_section(model, section, v)
    if raw_spec and isinstance(raw_spec, dict) and raw_spec.get(section) is not None:
        return load_section(model, section, raw_spec.get(section))
    return model()
