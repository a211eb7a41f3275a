"""Issue 37.8: a command run by the probe cannot read the rest of the probe script.

With ``sh -s`` the shell read its script from stdin as it ran; a command could open the shell's
fd 0 through /proc (or just read its own inherited stdin) and read what was left, the framing
marker among it. Every one-exec script now runs as ``sh -c SCRIPT_RUNNER``: read whole, stdin
pointed at /dev/null, run from memory. Here a script whose first command reads its own stdin and
the shell's /proc/<pid>/fd/0, followed by more than a pipe's worth (64 KiB) of lines holding a
token: the token never reaches the command's output. local:// (the same runner as over SSH,
whose command line is checked too).
"""

from __future__ import annotations

import re

from nodegate.transport import SCRIPT_RUNNER, Target
from nodegate.transport.deadline import Deadline

TOKEN = "NG-SECRET-REST-OF-SCRIPT"


def _script() -> str:
    probe = ('ng_got=$( { cat /proc/$$/fd/0; cat; } 2>/dev/null | head -c 200000 | tr -d "\\000" )\n'
             'printf "READ %s BYTES\\n" "$(printf %s "$ng_got" | wc -c)"\n'
             'case "$ng_got" in *' + TOKEN + '*) echo LEAKED ;; esac\n')
    rest = "".join(f": {TOKEN} line {i} " + "x" * 80 + "\n" for i in range(1500))   # ~150 KB
    return probe + rest + "echo END\n"


def test_a_probe_command_reads_nothing_of_the_script_local():
    t = Target("local://")
    with Deadline(60, label="exec") as dl:
        r = t.run(_script().encode(), dl, 60)
    out = r.stdout.decode(errors="replace")
    assert "END" in out, out[-500:]
    assert "LEAKED" not in out
    assert re.search(r"READ\s+0 BYTES", out), out[:500]


def test_every_transport_runs_the_script_the_same_way():
    assert Target("local://").local_argv() == ["sh", "-c", SCRIPT_RUNNER]
    assert Target("chroot:///srv/n1").local_argv() == ["chroot", "/srv/n1", "sh", "-c", SCRIPT_RUNNER]
    assert Target("ssh://root@10.0.0.1")._command() == f"sh -c '{SCRIPT_RUNNER}'"
    assert Target("paramiko://root@10.0.0.1?sudo=true")._command() == f"sudo -n sh -c '{SCRIPT_RUNNER}'"
    assert "'" not in SCRIPT_RUNNER   # it is single-quoted on the remote command line
