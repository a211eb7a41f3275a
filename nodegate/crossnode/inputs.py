"""The cross-node phase's input files, read into a ``PhaseConfig``: the ``crossnode:`` section
(a YAML file), the site's cable plan and expected topology the section names, a discovered
fabric (ibnetdiscover output) and an ibdiagnet log. Shared by ``python -m nodegate.crossnode``
and the ``nodegate --crossnode`` option (plugins/nodegate_crossnode.py).

Errors: ``PhaseError`` naming the file (and line) for input that makes no run possible: a
section that is not YAML or does not validate, a file that cannot be read, a cable plan that
does not validate. A topology file that reads but does not parse is NOT an error here: the
phase reports it (ERROR naming file:line) and keeps what it measured (docs/crossnode.md "Bad
input").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import SpecError
from .phase import PhaseConfig, PhaseError
from .spec import CrossnodeSpec


#: the largest input file read (bytes): an ibnetdiscover topology of a 4,096-node fabric is a
#: few MB; anything far larger is not one of these files
READ_CAP = 256 * 1024 * 1024


def _read(what: str, path: str) -> str:
    """A regular file's text (a FIFO or device is refused before it is read: it would block or
    never end), at most READ_CAP bytes. Raises PhaseError naming ``what`` and ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PhaseError(f"{what} {path}: not a regular file")
            if st.st_size > READ_CAP:
                raise PhaseError(f"{what} {path}: {st.st_size} bytes, more than {READ_CAP}")
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(READ_CAP + 1)
        finally:
            os.close(fd)
        if len(data) > READ_CAP:
            raise PhaseError(f"{what} {path}: more than {READ_CAP} bytes")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PhaseError(f"{what} {path}: {e}") from None


def _beside(path: str | None, base: Path) -> str | None:
    """A file the section names, relative to the section file's folder (as an Ansible
    inventory's group_vars are to the inventory), not to wherever nodegate was started."""
    if not path:
        return path
    p = Path(path).expanduser()
    return str(p if p.is_absolute() else base / p)


def load_spec(path: str) -> CrossnodeSpec:
    """The ``crossnode:`` section of a YAML file (the section itself, or a mapping holding it
    under ``crossnode:`` or ``nodegate: crossnode:``). ``cable_plan`` and ``topology_file`` are
    read relative to the folder of ``path``. Raises PhaseError naming ``path:line``."""
    import yaml
    from pydantic import ValidationError

    from ..yamlio import safe_load
    text = _read("cross-node spec", path)
    try:
        data = safe_load(text) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise PhaseError(f"{path}{f':{mark.line + 1}' if mark else ''}: not YAML "
                         f"({getattr(e, 'problem', None) or e})") from None
    if isinstance(data, dict) and isinstance(data.get("nodegate"), dict):
        data = data["nodegate"]
    if isinstance(data, dict) and "crossnode" in data:
        data = data["crossnode"] or {}
    try:
        spec = CrossnodeSpec.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0] if e.errors() else {"loc": (), "msg": str(e)}
        loc = tuple(first.get("loc", ()))
        key = ".".join(str(x) for x in loc)
        line = _line_of(text, loc)
        raise PhaseError(f"{path}{f':{line}' if line else ''}: crossnode{'.' + key if key else ''}: "
                         f"{first.get('msg', '')}"[:2000]) from None
    base = Path(path).parent
    return spec.model_copy(update={"cable_plan": _beside(spec.cable_plan, base),
                                   "topology_file": _beside(spec.topology_file, base)})


def _line_of(text: str, loc: tuple) -> int | None:
    """The 1-based line of the key ``loc`` (pydantic's error location inside the section) in the
    YAML ``text``, found on PyYAML's node tree (marks, no value built: linear in the text); the
    deepest key that exists (an error of the whole section: None). The section may sit under
    ``crossnode:`` or ``nodegate: crossnode:``, as ``load_spec`` reads it."""
    import yaml
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None

    def child(n, key):
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                    return k, v
        elif isinstance(n, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(n.value):
            return n.value[key], n.value[key]
        return None

    for wrap in ("nodegate", "crossnode"):
        c = child(node, wrap)
        if c is not None and isinstance(c[1], yaml.MappingNode):
            node = c[1]
    line = None
    for key in loc:
        c = child(node, key)
        if c is None:
            break
        line, node = c[0].start_mark.line + 1, c[1]
    return line


def phase_config(spec: CrossnodeSpec, run_id: str = "", *, ibnetdiscover: str | None = None,
                 ibdiagnet: str | None = None) -> PhaseConfig:
    """A PhaseConfig with the files ``spec`` names read (cable plan, topology file) and the
    optional discovered fabric and ibdiagnet log. Raises PhaseError naming the file."""
    cfg = PhaseConfig(spec, run_id=run_id)
    if spec.cable_plan:
        from .static import cable_plan_where, load_cable_plan
        text = _read("cable plan", spec.cable_plan)
        try:
            cfg.cable_plan = load_cable_plan(text, source=spec.cable_plan)
        except SpecError as e:
            raise PhaseError(str(e)) from None
        cfg.cable_plan_where = cable_plan_where(text, spec.cable_plan)
    if spec.topology_file:
        cfg.expected_topology = _read("topology file", spec.topology_file)
    if ibnetdiscover:
        cfg.discovered_topology = _read("ibnetdiscover output", ibnetdiscover)
        cfg.discovered_topology_file = ibnetdiscover
    if ibdiagnet:
        cfg.ibdiagnet_log = _read("ibdiagnet log", ibdiagnet)
        cfg.ibdiagnet_file = ibdiagnet
    return cfg


def recorded_runs(evidence_dir: Path | str) -> list[str]:
    """Run ids recorded under ``<evidence_dir>/crossnode/`` (those with a plan.json), oldest
    first (run ids start with the UTC time they were made)."""
    d = Path(evidence_dir) / "crossnode"
    try:
        return sorted(p.name for p in d.iterdir() if not p.is_symlink() and p.is_dir() and (p / "plan.json").is_file())
    except OSError:
        return []
