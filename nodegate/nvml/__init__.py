"""NVML through nvidia-ml-py: the node-side script, its probe item and local collection.

- ``probe_nvml.py``: the self-contained script (stdlib + pynvml, Python 3.6+) that prints one
  JSON document (schema in docs/nvml.md).
- ``probe_shell_snippet()``: sh appended to the probe (``@@EXTRA@@``) producing item
  ``nvml.json`` when the node has python3.
- ``collect_local_nvml()`` / ``local_nvml_item()``: the same script on this machine.
- ``mapping``: JSON -> GpuFacts (``gpus_from_nvml_json``, ``nvml_init_error``, ``nvml_status``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from importlib import resources

from ..errors import EvidenceError
from ..probe import RawItem
from .mapping import (NvmlStatus, NvmlSystem, NvmlUnavailable, gpus_from_nvml_json,
                      nvml_field_errors, nvml_init_error, nvml_status, nvml_system)

__all__ = ["EVIDENCE_KEY", "script_text", "probe_shell_snippet", "collect_local_nvml",
           "local_nvml_item", "gpus_from_nvml_json", "nvml_init_error", "nvml_status",
           "nvml_system", "nvml_field_errors", "NvmlStatus", "NvmlSystem", "NvmlUnavailable"]

#: Bundle evidence key of the NVML document (probe ITEMS documents it).
EVIDENCE_KEY = "nvml.json"

_SCRIPT = "probe_nvml.py"
_HEREDOC_END = "NG_NVML_PY_EOF"
_PY_RE = re.compile(r"(?:/[A-Za-z0-9._+-]+)+|[A-Za-z0-9_.][A-Za-z0-9._+-]*")


def script_text() -> str:
    """Source of ``probe_nvml.py`` (package data)."""
    return resources.files(__package__).joinpath(_SCRIPT).read_text()


def probe_shell_snippet(python: str = "python3") -> str:
    """POSIX sh for the probe's ``@@EXTRA@@``: item ``nvml.json`` = the script run by the
    node's ``python3 -B -`` from a quoted heredoc, under the probe's per-command timeout
    (``ng_to``). ``python3`` missing -> rc 127 "python3: command not found" (ng_need).
    Nothing is written on the node: the script comes on stdin and ``-B`` stops bytecode
    caches for pynvml. Output framing is the probe's (ng_item).

    ``python``: the interpreter to run, a bare command name or an absolute path (for
    ``local://``, ``sys.executable``: the environment that has nvidia-ml-py). ValueError for
    anything else (it is pasted into the script)."""
    if not _PY_RE.fullmatch(python):
        raise ValueError(f"unusable interpreter for the probe: {python!r}")
    body = script_text()
    if any(line.strip() == _HEREDOC_END for line in body.splitlines()):
        raise ValueError("probe_nvml.py contains the heredoc terminator")
    return (
        "# nvml.json: NVML facts through nvidia-ml-py (nodegate/nvml/probe_nvml.py, docs/nvml.md)\n"
        "ng_f_nvml() {\n"
        f"  ng_to {python} -B - <<'{_HEREDOC_END}'\n"
        f"{body.rstrip()}\n"
        f"{_HEREDOC_END}\n"
        "}\n"
        f"ng_need {python} {EVIDENCE_KEY} ng_f_nvml\n"
    )


def _run_local(python: str | None, timeout_s: float) -> subprocess.CompletedProcess:
    # A subprocess, not in-process: nvmlInit can hang on a wedged GPU, and a fresh process
    # leaves no NVML state behind in the controller.
    return subprocess.run([python or sys.executable, "-B", "-"], input=script_text().encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout_s,
                          check=False)


def collect_local_nvml(timeout_s: float = 60.0, python: str | None = None) -> str:
    """Run the NVML script on this machine; return its JSON text (stdout).

    ``python`` defaults to the interpreter running nodegate (whose environment has
    nvidia-ml-py, a project dependency). Raises EvidenceError("nvml.json", reason) on timeout
    or a non-zero exit (the script itself always exits 0 with JSON).
    """
    try:
        cp = _run_local(python, timeout_s)
    except subprocess.TimeoutExpired:
        raise EvidenceError(EVIDENCE_KEY, f"command timed out after {timeout_s:g} s") from None
    except OSError as e:
        raise EvidenceError(EVIDENCE_KEY, f"could not start {python or sys.executable}: {e}") from None
    if cp.returncode != 0:
        first = cp.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise EvidenceError(EVIDENCE_KEY, f"exit code {cp.returncode}: {first[0][:300]}")
    return cp.stdout.decode("utf-8", errors="replace")


def local_nvml_item(timeout_s: float = 60.0, python: str | None = None) -> RawItem:
    """The same run as a probe RawItem (for ``Bundle.from_raw``): timeout -> status
    ``timeout`` with rc None, otherwise stdout/stderr/rc as the process gave them."""
    t0 = time.monotonic()
    try:
        cp = _run_local(python, timeout_s)
    except subprocess.TimeoutExpired as e:
        return RawItem(EVIDENCE_KEY, stdout=e.stdout or b"", stderr=e.stderr or b"", rc=None,
                       duration_s=round(time.monotonic() - t0, 3), status="timeout")
    except OSError as e:  # like the probe's ng_need: a missing interpreter is rc 127
        return RawItem(EVIDENCE_KEY, stderr=f"{python or sys.executable}: {e}".encode(), rc=127)
    return RawItem(EVIDENCE_KEY, stdout=cp.stdout, stderr=cp.stderr, rc=cp.returncode,
                   duration_s=round(time.monotonic() - t0, 3))
