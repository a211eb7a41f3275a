"""One long exec per node with a stop switch: the transport of the burn-in and performance phases.

``run_stream(target, script, deadline_s, stop)`` runs the script the way the probe runs
(``Target.run``: testinfra URL, known_hosts policy, and ONE deadline for every stage from TCP
connect to the last byte: ``nodegate.transport.deadline``) and returns an ``ExecResult`` when
the script ends, the deadline passes or ``stop`` is set (Ctrl-C, SIGTERM). Stopping shuts the
SSH connection down: sshd then closes the session's pipes, the script's next heartbeat write
fails and the script stops the load (sshd sends no SIGHUP to a session without a pty). Locally
(``local://``) and through the OpenSSH client the process group gets SIGTERM (the script stops
its load) and SIGKILL ``LOCAL_STOP_GRACE_S`` later if it is still there.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..transport import ExecResult, Target

#: After a stop, how long a local script gets to stop its load before its group is killed.
LOCAL_STOP_GRACE_S = 40.0

#: Phase stderr kept per node, bytes.
STDERR_CAP = 1024 * 1024


def run_stream(target: Target, script: str, deadline_s: float, stop: threading.Event,
               on_data: Callable[[bytes], None] | None = None) -> ExecResult:
    """Run ``script`` with ``sh -s`` on ``target``; ``timed_out`` is True when the deadline or
    ``stop`` ended it (``interrupted`` says which). The exec gets ``deadline_s`` after the
    connect, the connect ``target.connect_timeout``. Raises TransportError before the command
    runs (connect, host key, auth, no channel, no exec reply)."""
    with target.node_deadline(deadline_s, stop) as dl:
        return target.run(script.encode(), dl, deadline_s, on_data=on_data, stderr_cap=STDERR_CAP,
                          stop_at_cap=False, grace_s=LOCAL_STOP_GRACE_S)
