"""Markers on every nodegate item, so pytest's own selection works on checks:
``-m critical``, ``-m "pcie and not minor"`` (a severity and an area per item, registered and
listed by ``pytest --markers``), and ``-k NG-CLK-001`` (the check id as an extra keyword; ``-k
clocks_event_reasons`` already matches the test name, ``-k gpu007`` the node in the item id)."""

from __future__ import annotations

import pytest

from .. import checks as ng_checks
from . import granularity
from .items import verdict_param

SEVERITIES = {"critical": "a check whose FAIL takes the node out of service",
              "major": "a check whose FAIL needs action before the node takes work",
              "minor": "a check whose FAIL is worth a ticket"}
#: areas beyond the check modules: burn-in items, baseline regression items
EXTRA_AREAS = {"burnin": "a burn-in item (--burn-in)", "regression": "a baseline regression item (--baseline)",
               "perf": "a performance item (--perf)"}
_MARKS: dict[str, pytest.MarkDecorator] = {}


def areas() -> dict[str, str]:
    """Area marker -> description: one per check module (nodegate.checks.CHECK_MODULES)."""
    out = {m: f"checks of nodegate.checks.{m}" for m in ng_checks.CHECK_MODULES}
    out.update(EXTRA_AREAS)
    return out


def register(config) -> None:
    for name, what in {**SEVERITIES, **areas()}.items():
        config.addinivalue_line("markers", f"{name}: {what} (nodegate)")


def area_of(cdef) -> str | None:
    """The check module of ``cdef`` (nodegate.checks.<area>), None for a check declared elsewhere."""
    mod = getattr(cdef.func, "__module__", "") or ""
    area = mod.rsplit(".", 1)[-1]
    return area if mod.startswith("nodegate.checks.") and area in ng_checks.CHECK_MODULES else None


def _mark(name: str) -> pytest.MarkDecorator:
    m = _MARKS.get(name)
    if m is None:
        m = _MARKS[name] = getattr(pytest.mark, name)
    return m


def mark_item(item) -> None:
    """pytest_itemcollected: a suite item gets its check's severity and area markers and the
    check id as a keyword; burn-in and regression items their area."""
    p = verdict_param(item)
    if p is not None:
        cdef = ng_checks.load_all().get(p.check_id)
        if cdef is not None:
            if cdef.severity in SEVERITIES:
                item.add_marker(_mark(cdef.severity))
            area = area_of(cdef)
            if area is not None:
                item.add_marker(_mark(area))
            item.extra_keyword_matches.add(cdef.id)
        if p.slot is not None and not p.folded and not granularity.of(item.config).every:
            # a per-GPU item split for the run's selection: -k matches the folded item's name on
            # it too (``-k "test_x[n1]"`` selects every GPU of n1 whichever form the run has:
            # nodegate.session.granularity)
            item.extra_keyword_matches.add(f"{item.originalname}[{p.node}]")
        return
    cs = getattr(item, "callspec", None)
    if cs is None:
        return
    if "burnin_verdict" in cs.params:
        item.add_marker(_mark("burnin"))
        from ..burnin.rules import RULES
        v = cs.params["burnin_verdict"]
        # an empty parametrization gives pytest's NOTSET, not a tuple: no rule to read
        rd = RULES.get(str(v[0])) if isinstance(v, tuple) and v else None
        if rd is not None and rd.severity in SEVERITIES:
            item.add_marker(_mark(rd.severity))
    elif "perf_verdict" in cs.params:
        item.add_marker(_mark("perf"))
        item.add_marker(_mark("major"))
    elif "regression" in cs.params:
        item.add_marker(_mark("regression"))
