"""The probe's nvml.json item: render the probe with probe_shell_snippet(), run it under dash
and busybox sh the way the transport does (script on stdin to ``sh -s``), split the stream."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodegate.nvml import gpus_from_nvml_json, nvml_status, probe_shell_snippet
from nodegate.probe import render_script, split_stream

FAKE = Path(__file__).parent / "fake_pynvml"
VENV_BIN = str(Path(sys.executable).parent)

#: the Debian package of each shell (tools/system_packages.txt)
PACKAGE = {"dash": "dash", "busybox": "busybox-static"}
SHELLS = [pytest.param(["dash", "-s"], id="dash"), pytest.param(["busybox", "sh", "-s"], id="busybox")]


def run_probe(sh: list[str], path: str, *, only_path: bool = False, _python: str = "python3", **env_extra):
    exe = shutil.which(sh[0])
    if exe is None:   # a fresh machine: skip naming the package (tools/system_packages.txt), never fail
        pytest.skip(f"{sh[0]} not installed (apt-get install {PACKAGE.get(sh[0], sh[0])})")
    sh = [exe, *sh[1:]]
    script, marker = render_script(extra=probe_shell_snippet(_python), timeout_s=60)
    if only_path:  # the probe appends /usr/bin etc. to PATH; keep exactly ``path`` instead
        script = re.sub(r'(?m)^PATH="\$PATH:[^"]*"$', f'PATH="{path}"', script, count=1)
        assert f'PATH="{path}"' in script
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), **env_extra}
    cp = subprocess.run(sh, input=script.encode(), capture_output=True, env=env, timeout=240)
    items, complete = split_stream(cp.stdout, marker, stderr=cp.stderr)
    assert (cp.returncode, complete) == (0, True)
    return items["nvml.json"]


def test_snippet_frames_one_item():
    s = probe_shell_snippet()
    assert s.count("NG_NVML_PY_EOF") == 2
    assert s.rstrip().endswith("ng_need python3 nvml.json ng_f_nvml")
    assert "ng_to python3 -B - <<'NG_NVML_PY_EOF'" in s


@pytest.mark.parametrize("sh", SHELLS)
def test_real_pynvml_no_driver(sh):
    it = run_probe(sh, f"{VENV_BIN}:/usr/bin:/bin")
    assert (it.rc, it.status, it.stderr) == (0, "ok", b"")
    assert nvml_status(it.stdout).error == "NVML_ERROR_LIBRARY_NOT_FOUND"


@pytest.mark.parametrize("sh", SHELLS)
def test_python_without_pynvml(sh, tmp_path):
    # a python3 on PATH that cannot import pynvml (-S: no site-packages)
    wrapper = tmp_path / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    it = run_probe(sh, f"{tmp_path}:/usr/bin:/bin")
    assert (it.rc, nvml_status(it.stdout).kind) == (0, "pynvml_missing")


@pytest.mark.parametrize("sh", SHELLS)
def test_fake_h200_end_to_end(sh):
    it = run_probe(sh, f"{VENV_BIN}:/usr/bin:/bin", PYTHONPATH=str(FAKE))
    assert (it.rc, it.status) == (0, "ok")
    g = gpus_from_nvml_json(it.stdout)[0]
    assert (g.name, g.pci_bus_id, g.link.current_gen, g.clocks_event_reasons_mask) == (
        "NVIDIA H200", "0000:00:06.0", 5, 1)


@pytest.mark.parametrize("sh", SHELLS)
def test_no_python3_is_tool_missing(sh, tmp_path):
    # PATH with the shell's basic tools but no python3 -> rc 127, recorded, not fatal
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("cat", "head", "uname", "timeout", "sed", "grep", "ls", "readlink", "tr", "sleep", "id"):
        p = shutil.which(tool, path="/usr/bin:/bin")
        if p:
            (bindir / tool).symlink_to(p)
    it = run_probe(sh, str(bindir), only_path=True)
    assert (it.rc, it.stdout) == (127, b"")
    assert it.stderr == b"python3: command not found"
    assert json.dumps(it.key) == '"nvml.json"'


@pytest.mark.parametrize("sh", SHELLS)
def test_explicit_interpreter_path(sh):
    # local:// runs give sys.executable (the environment with nvidia-ml-py) even when the
    # python3 on PATH has no pynvml
    script_py = sys.executable
    it = run_probe(sh, "/usr/bin:/bin", _python=script_py)
    assert nvml_status(it.stdout).error == "NVML_ERROR_LIBRARY_NOT_FOUND"


@pytest.mark.parametrize("bad", ["python3; rm -rf /", "-c", "py thon", "$(id)", "../python3", ""])
def test_interpreter_is_validated(bad):
    with pytest.raises(ValueError):
        probe_shell_snippet(bad)
