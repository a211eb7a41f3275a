"""The remediation of an ERROR: how to obtain the evidence that was missing.

An ERROR proves nothing about the node's state, so it never carries the check's FAIL
remediation ("Check cooling, PSU..." on a driver/library mismatch sends people to the wrong
place). Its message is nodegate's own text (``Bundle.get``/``Evidence.problem``, ``NodeFacts``,
the gather's transport errors, ``verdicts.evaluate``); each known cause maps to what an operator
does to get the evidence, then re-runs nodegate on the node. First match wins.
"""

from __future__ import annotations

import re

RERUN = "then re-run nodegate on the node (--limit <node>)"

_RULES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p, re.I), r) for p, r in (
    (r"^spec error:",
     "Fix the node's spec (the message names the file and key; make it pass start-up validation), " + RERUN + "."),
    (r"node not gathered:? \(?(?:unreachable|timeout|connect|refused)",
     "Make the node reachable over SSH (ansible_host/port, routing, sshd running, --connect-timeout), " + RERUN + "."),
    (r"node not gathered:? \(?dns",
     "The node's name does not resolve: fix ansible_host (or DNS / /etc/hosts), " + RERUN + "."),
    (r"node not gathered:? \(?hostkey",
     "Verify the node's SSH host key out of band and record it in known_hosts (or --accept-new-host-keys "
     "for a newly installed node; a changed key is refused on purpose), " + RERUN + "."),
    (r"node not gathered:? \(?auth",
     "Fix SSH authentication for the probe's user (ansible_user, ansible_ssh_private_key_file, the key in "
     "authorized_keys), " + RERUN + "."),
    (r"node not gathered|internal error while gathering|bundle .* unreadable|bundle not written",
     "The node's evidence could not be gathered or read (the message says why); fix that, " + RERUN + "."),
    (r"driver_library_mismatch|driver/library version mismatch",
     "nvidia-smi cannot talk to the loaded driver (user-space libraries and kernel module differ): fix the "
     "driver stack first (NG-DRV-001: reboot into the installed driver, or reload the modules), " + RERUN
     + " to evaluate this check."),
    (r"nvidia-smi failed \((?:no_driver|communicate)|couldn't communicate with the nvidia driver",
     "nvidia-smi finds no NVIDIA driver: load the driver (see the driver and module checks), " + RERUN + "."),
    (r"nvidia-smi failed \(no_devices\)|no devices were found",
     "The driver sees no GPU: check that the GPUs are bound to nvidia (lspci -k) and the kernel log, "
     + RERUN + "."),
    (r"tool missing|command not found",
     "Install the missing tool on the node or put it on the probe's PATH (the message names it), " + RERUN + "."),
    (r"permission denied|operation not permitted|not permitted|dmesg_restrict|must be root",
     "The evidence needs root: re-run with --sudo (sudo -n for the probe's user)."),
    # a site check's command (nodegate.site: "'<command>': timed out (the command deadline ...)")
    (r"^'.*': timed out",
     "The site check's command did not finish before its deadline (nodegate_check(timeout=...), else "
     "--command-timeout): find what it waits for on the node (a hung service or mount), or raise the "
     "deadline for a slow but healthy command; " + RERUN + "."),
    (r"timed out|deadline",
     "The command did not finish in time: a hung nvidia-smi usually means a GPU or driver fault (look at "
     "the kernel log and the GPU's state); for a slow but healthy node raise --command-timeout / "
     "--probe-timeout; " + RERUN + "."),
    (r"evidence not collected|probe stopped|probe output ended early",
     "The probe did not collect this item (the message says where it stopped); " + RERUN
     + "; if it stops again, the item it stopped at is the one to look at."),
    (r"exceeded the per-item cap|output exceeded",
     "The command's output exceeded the per-item cap: look at the raw item in the node's evidence archive; "
     "a flood of output usually means a fault on the node."),
    (r"unparsable|unrecognised|not valid utf-8|malformed",
     "nodegate could not read this output: attach the node's evidence archive to a nodegate bug report "
     "(it holds the raw output); the check stays unevaluated until then."),
    (r"not present on the node|reports no gpu at index|gpu slot",
     "The GPU is missing from nvidia-smi, so its own checks cannot run: see the gpu_count / gpu_model "
     "findings for the node (NG-INV-001/002) and the kernel log for its bus id."),
    (r"internal error in check",
     "A bug in nodegate's check: report it with the node's evidence archive; the check stays unevaluated."),
))

DEFAULT = ("The check could not be evaluated: obtain the evidence the message names (see the node's evidence "
           "archive for the raw output), " + RERUN + ".")


def error_remediation(message: str) -> str:
    """What to do about an ERROR with this message (never a FAIL remediation)."""
    m = message or ""
    for pat, text in _RULES:
        if pat.search(m):
            return text
    return DEFAULT
