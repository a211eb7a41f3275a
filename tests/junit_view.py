"""Per-item view of nodegate's compact JUnit (nodegate/reports/junit.py), for the tests that
compare item outcomes through junit.xml.

nodegate's JUnit counts a GPU check's passed GPUs on one testcase named by them,
``test_x[<node>-gpu0..2,4..7]`` (or every GPU skipped: one skipped testcase named so), and puts a FAIL or ERROR item's
properties on a ``<testsuite>`` of its own around its testcase (junit-10.xsd has no properties in
a testcase). ``cases(path)`` expands that back to one entry per item, as pytest's own JUnit
listed them, so the outcome comparisons keep testing what the file says.
"""

from __future__ import annotations

import re
from pathlib import Path

import defusedxml.ElementTree as DET

_GROUP = re.compile(r"^(?P<head>.*)-gpu(?P<ranges>\d+(?:\.\.\d+)?(?:,\d+(?:\.\.\d+)?)*)\]$")


def _indices(ranges: str) -> list[int]:
    out = []
    for part in ranges.split(","):
        a, _, b = part.partition("..")
        out += list(range(int(a), int(b or a) + 1))
    return out
KINDS = {"failure": "fail", "error": "error", "skipped": "skip"}


def cases(path: Path):
    """Yield ``(classname, name, kind, message, properties)`` per item: kind pass|fail|error|skip,
    message the failure/error/skipped element's ``message`` (None for a pass), properties the
    item's ``[(name, value), ...]`` (FAIL/ERROR items; [] otherwise)."""
    root = DET.parse(path).getroot()
    parents = {child: parent for parent in root.iter() for child in parent}
    for tc in root.iter("testcase"):
        name, cls = tc.get("name", ""), tc.get("classname", "")
        el = next((c for c in tc if c.tag in KINDS), None)
        kind = KINDS[el.tag] if el is not None else "pass"
        suite = parents.get(tc)
        props: list[tuple[str, str]] = []
        if suite is not None and suite.tag == "testsuite" and len(suite.findall("testcase")) == 1:
            props = [(p.get("name"), p.get("value")) for p in suite.findall("properties/property")]
            if not any(n == "check_id" for n, _ in props):
                props = []   # a node's suite (node, status, ...), not an item's
        m = _GROUP.match(name) if kind in ("pass", "skip") else None
        if m and ("," in m.group("ranges") or ".." in m.group("ranges")):
            for g in _indices(m.group("ranges")):
                yield cls, f"{m.group('head')}-gpu{g}]", kind, (el.get("message") if el is not None else None), []
            continue
        yield cls, name, kind, (el.get("message") if el is not None else None), props


def outcomes(path: Path) -> dict[str, str]:
    """{test name: outcome}; a name seen twice keeps the worst (error > fail > skip > pass)."""
    rank = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
    out: dict[str, str] = {}
    for _, name, kind, _, _ in cases(path):
        if name not in out or rank[kind] > rank[out[name]]:
            out[name] = kind
    return out
