"""A site module's ``testinfra_hosts``, honoured as a restriction to the run's inventory nodes.

testinfra runs a module's tests on the hosts its module-level ``testinfra_hosts`` names (a list
of host specs: testinfra's ``pytest_generate_tests``). In a nodegate run the nodes and how to
reach them come from the inventory, so the list only *restricts* the module's tests to the
run's nodes it names (after ``--limit``; ``-k``/``-m`` select among them as always):

- ``ansible://PATTERN`` (testinfra's ansible backend: ``ansible://all``, ``ansible://slurm-node``,
  ``ansible://gpu01``): the nodes ansible-core's host pattern ``PATTERN`` selects (``:``, ``:&``,
  ``:!``, ``~regex``, wildcards, a group or a host name); ``ansible://`` alone is ``all``;
- a plain name (``gpu01``, what molecule's ``AnsibleRunner(...).get_hosts('all')`` returns), or
  ``ssh://``, ``paramiko://``, ``safe-ssh://`` with a user and port (``ssh://root@gpu01:22``):
  the inventory host of that name, matched by ansible-core as a one-host pattern; the user, port
  and key are the inventory's (the URL's are not used: a site test never connects otherwise
  than the inventory says);
- anything else (``local://``, ``docker://``, ``kubectl://``, ``winrm://``, an ``ansible://`` with a
  query such as ``?ansible_inventory=``, a value that is not a string) is a collection error
  naming the file and the value: nodegate cannot map it onto an inventory node.

The patterns are matched by ansible-core (nodegate.inventory.match_groups) against the run's
nodes and their inventory groups (ancestors included), the same way on a live run (groups from
the inventory) and on ``--replay`` (groups from each bundle's meta.json ``groups``), so a replay
runs the same items.

Molecule's test files build ``testinfra_hosts`` at import from ``MOLECULE_INVENTORY_FILE``:
``molecule_env`` points it at the run's inventory (the one source, or a generated YAML of the
run's hosts and groups when there are several sources or none, as on ``--replay``) before the
site modules are imported, unless the operator set it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from pathlib import Path

import yaml

#: testinfra backends whose URL names one host nodegate can look up in the inventory
NAMED = ("ssh", "paramiko", "safe-ssh")
#: group names kept from a bundle's meta.json (untrusted): Ansible's own group name characters
_GROUP = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
MAX_GROUPS = 1000
ENV = "MOLECULE_INVENTORY_FILE"


class TestinfraHostsError(ValueError):
    """A ``testinfra_hosts`` value nodegate cannot map onto inventory nodes (file and value named)."""


def patterns(value, where: str) -> list[str]:
    """The Ansible host patterns a module's ``testinfra_hosts`` stands for (module docstring).
    Raises TestinfraHostsError naming ``where`` (the file) and the value."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TestinfraHostsError(f"{where}: testinfra_hosts = {_short(value)}: a list of host specs (testinfra's "
                                  "form), e.g. ['ansible://slurm-node']")
    return [_pattern(v, where) for v in value]


def _pattern(spec, where: str) -> str:
    if not isinstance(spec, str) or not spec.strip():
        raise TestinfraHostsError(f"{where}: testinfra_hosts entry {_short(spec)} is not a host spec")
    if "://" not in spec:
        return spec.strip()
    scheme, _, rest = spec.partition("://")
    if scheme == "ansible":
        pattern, _, query = rest.partition("?")
        if query:
            raise TestinfraHostsError(
                f"{where}: testinfra_hosts entry {_short(spec)}: nodegate cannot honour ?{query} (the hosts and how "
                "to reach them come from the run's --inventory): use ansible://PATTERN alone")
        return urllib.parse.unquote(pattern) or "all"
    if scheme in NAMED:
        try:
            host = urllib.parse.urlsplit(spec).hostname
        except ValueError:
            host = None
        if host:
            return host
    raise TestinfraHostsError(
        f"{where}: testinfra_hosts entry {_short(spec)} cannot be mapped onto the run's inventory nodes (nodegate "
        "runs site tests on inventory nodes only): use ansible://GROUP, a host name, or ssh://HOST")


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 200 else r[:199] + "…"


def restrict(value, where: str, nodes: list[str], groups: dict[str, list[str]]) -> list[str]:
    """The nodes of ``nodes`` (the run's, in order) that ``testinfra_hosts`` = ``value`` names.
    Raises TestinfraHostsError (bad value) or nodegate.errors.InventoryError (a pattern
    ansible-core refuses), each naming the file."""
    from ..errors import InventoryError
    from ..hostpatterns import match_groups
    pats = patterns(value, where)
    try:
        return match_groups(pats, nodes, groups)
    except InventoryError as e:
        raise TestinfraHostsError(f"{where}: testinfra_hosts: {e}") from None


def node_groups(config, run, nodes: list[str]) -> dict[str, list[str]]:
    """Each node's inventory groups: the run's jobs (live, or --replay with --inventory), else
    its bundle's meta.json ``groups`` (plain --replay; validated: a list of group names)."""
    from ..session.api import JOBS_KEY
    jobs = config.stash.get(JOBS_KEY, None) or []
    by_job = {str(j.name): [str(g) for g in getattr(j, "groups", ()) or ()] for j in jobs}
    out: dict[str, list[str]] = {}
    for n in nodes:
        if n in by_job:
            out[n] = by_job[n]
            continue
        b = run.bundles.get(n) if run is not None else None
        if b is not None:
            got = (getattr(b, "meta", None) or {}).get("groups")
        elif run is not None and getattr(run, "mode", "") == "replay" and hasattr(run, "meta_of"):
            # meta.json alone, not kept: the whole bundle of every node at session start made a
            # streaming --replay hold every node (docs/performance.md)
            got = run.meta_of(n).get("groups")
        else:
            got = None
        out[n] = [g for g in got[:MAX_GROUPS] if isinstance(g, str) and _GROUP.match(g)] \
            if isinstance(got, list) else []
    return out


def molecule_env(config, run) -> str | None:
    """Set ``MOLECULE_INVENTORY_FILE`` to the run's inventory (module docstring) unless it is set;
    the path set, or None. The generated file (names and groups only: no variable, no password)
    lives in a temporary folder removed by ``cleanup``. testinfra's AnsibleRunner runs
    ``ansible-inventory`` on it: the interpreter's own folder is appended to PATH when
    ``ansible-inventory`` is not on it (a venv that was not activated)."""
    if os.environ.get(ENV):
        return None
    from ..session.api import JOBS_KEY
    sources = getattr(config.option, "inventory", None) or []
    sources = [sources] if isinstance(sources, str) else list(sources)
    if len(sources) == 1 and "," not in sources[0]:
        path = os.path.abspath(os.path.expanduser(sources[0]))
    else:
        nodes = [str(n) for n in getattr(run, "all_nodes", None) or [j.name for j in config.stash.get(JOBS_KEY, None) or []]]
        groups = node_groups(config, run, nodes)
        inv: dict = {"all": {"hosts": {n: None for n in nodes}, "children": {}}}
        for n in nodes:
            for g in groups.get(n, []):
                if g not in ("all", "ungrouped"):
                    inv["all"]["children"].setdefault(g, {"hosts": {}})["hosts"][n] = None
        d = tempfile.mkdtemp(prefix="nodegate-molecule-")
        config.add_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
        path = os.path.join(d, "inventory.yml")
        Path(path).write_text(yaml.safe_dump(inv, sort_keys=False))
    os.environ[ENV] = path
    config.add_cleanup(lambda: os.environ.pop(ENV, None))
    if shutil.which("ansible-inventory") is None and (Path(sys.executable).parent / "ansible-inventory").exists():
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + str(Path(sys.executable).parent)
    return path
