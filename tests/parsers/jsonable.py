"""Facts -> plain JSON values, for golden fixtures (NA -> "NA", sets sorted, tuples -> lists)."""

from __future__ import annotations

import dataclasses

from nodegate.facts import _Unsupported


def to_jsonable(obj):
    if isinstance(obj, _Unsupported):
        return "NA"
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return sorted(to_jsonable(v) for v in obj)
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj
