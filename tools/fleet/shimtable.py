"""The answers a shim gives: one recorded invocation per argument pattern of a simulated tool.

Its own module so that tools/fleet/render.py and tools/fleet/perf.py (which render_node calls
for a node with performance answers) both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Invocation:
    """One recorded answer of a shim: stdout, stderr, exit code, or a hang; ``sleep``: seconds the
    shim sleeps before it answers (a real tool's run time), or ``"arg"``: as many seconds as its
    last argument says (gpu_burn's duration); None: answers at once. ``seq``: a memory of earlier
    runs: the k-th call answers ``seq[min(k, len - 1)]`` instead of ``out`` (tools/fleet/perf.py's
    drifting nodes)."""

    out: str = ""
    err: str = ""
    rc: int = 0
    hang: bool = False
    sleep: float | str | None = None
    seq: tuple = ()          # successive stdout answers: the k-th call answers seq[min(k, len - 1)]


@dataclass
class ToolTable:
    """Answers of one tool by its argument string (shell ``case`` patterns; ``*`` = prefix)."""

    path: str
    cases: dict[str, Invocation] = field(default_factory=dict)
    default: Invocation = field(default_factory=lambda: Invocation(err="usage error\n", rc=2))
