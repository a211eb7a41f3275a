"""The burn-in script: render it for one node, and split its framed, streamed output.

``render(spec, duration_s)`` -> ``(script, marker)``; ``split(data, marker)`` -> ``Stream``
(nodegate.phase.script, shared with the performance phase): the framed items (same framing as
the probe: ``M BEGIN/END/ERR/ERREND``) plus the burn-in's own lines (``M EV``, ``M HB``) which
may sit anywhere, even inside an item, and are removed first.
"""

from __future__ import annotations

import shlex

from ..phase import script as P
from ..phase.script import ITEM_CAP, Event, Stream, split  # noqa: F401 - the burn-in's stream
from .spec import BurninSpec

#: Seconds one nvidia-smi sample may take on the node before ``timeout`` ends it (a GPU that
#: fell off the bus can hang nvidia-smi).
SAMPLE_TIMEOUT_S = 30


def template() -> str:
    """burnin.sh with the shared prelude (nodegate/phase/prelude.sh) spliced in."""
    return P.template(__package__, "burnin.sh")


def render(spec: BurninSpec, duration_s: int, *, marker: str | None = None) -> tuple[str, str]:
    """Return ``(script, marker)``. Every spec value is shell-quoted or an int."""
    cmd = (spec.command or "").replace("{seconds}", str(int(duration_s)))
    args = " ".join(shlex.quote(a) for a in spec.gpu_burn_args)
    fields = {
        "DURATION": str(int(duration_s)), "INTERVAL": str(int(spec.interval_s)),
        "LOAD": shlex.quote(spec.load), "GPUBURN": shlex.quote(spec.gpu_burn), "GPUBURN_ARGS": shlex.quote(args),
        "COMMAND": shlex.quote(cmd), "DCGM_LEVEL": str(int(spec.dcgm_level)), "GRACE": str(int(spec.grace_s)),
        "KILL": str(int(spec.stop_grace_s)), "TIMEOUT": str(SAMPLE_TIMEOUT_S), "CAP": str(ITEM_CAP),
    }
    return P.render(template(), fields, marker)


def deadline_s(spec: BurninSpec, duration_s: int) -> float:
    """Controller-side deadline for the whole exec: the window, the grace, every stop signal,
    and set-up (field discovery, kernel log) with margin."""
    return duration_s + spec.grace_s + 3 * spec.stop_grace_s + 2 * spec.interval_s + 120
