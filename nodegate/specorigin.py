"""Where a bad value of a host's ``nodegate:`` spec came from (issue 30 item 7).

ansible-core merges the variable (nodegate.inventory: ``hash_behaviour=merge``) and keeps no
origin per key, so an error in the merged spec could only say "merged from hosts.ini". Here each
source's own ``nodegate:`` fragment is read again with ansible-core's DataLoader
(``host_vars/<host>*``, the inventory's host variables, each group's ``group_vars/<group>*`` and
the inventory's group variables, as ansible-core's host_group_vars plugin finds them beside each
inventory source) and validated on its own: the first (highest precedence) whose error is the
merged spec's names the file and the key (docs/inventory.md). Called by
nodegate.jobs.build_jobs only when the merged spec is invalid.
"""

from __future__ import annotations

from pathlib import Path

from .ansible_core import ansible, plain
from .errors import SpecError
from .inventory import SPEC_VAR, Inventory


_VARS_EXTS = ("", ".yml", ".yaml", ".json")


def _vars_files(base: Path, kind: str, name: str) -> list[Path]:
    """``base/<kind>/<name>`` as ansible-core's host_group_vars plugin finds it: the file with
    any of its extensions, or every such file under a directory of that name (sorted)."""
    out: list[Path] = []
    for ext in _VARS_EXTS:
        p = base / kind / f"{name}{ext}"
        if p.is_file() and not p.is_symlink():
            out.append(p)
        elif ext == "" and p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in _VARS_EXTS and not f.name.startswith("."))
    return out


def spec_fragments(inv: Inventory, name: str) -> list[tuple[str, object]]:
    """Where host ``name``'s ``nodegate:`` variable comes from, as (file, fragment), highest
    precedence first: host_vars files, the inventory's own host variables, then per group (most
    specific first, Ansible's group order reversed) its group_vars files and the inventory's own
    group variables, ``all`` last. ansible-core keeps no per-key origin of a merged variable
    (issue 30): this reads each source file's fragment again (its DataLoader), so that an
    invalid value is reported with the file that holds it (``locate_spec_error``)."""
    a = ansible()
    ah = inv._im.get_host(name)
    srcs = [Path(s).expanduser() for s in inv.sources if "," not in str(s)]
    bases = [s if s.is_dir() else s.parent for s in srcs]
    out: list[tuple[str, object]] = []

    def from_files(kind: str, n: str) -> None:
        for b in bases:
            for f in reversed(_vars_files(b, kind, n)):
                try:
                    data = inv._loader.load_from_file(str(f))
                except a["AnsibleError"]:
                    continue
                if isinstance(data, dict) and SPEC_VAR in data:
                    out.append((str(f), data[SPEC_VAR]))

    from_files("host_vars", name)
    if SPEC_VAR in (ah.vars or {}):
        out.append((inv.source, ah.vars[SPEC_VAR]))
    for g in reversed(a["sort_groups"](ah.get_groups())):
        from_files("group_vars", g.name)
        gv = g.get_vars() or {}
        if SPEC_VAR in gv:
            out.append((inv.source, gv[SPEC_VAR]))
    return out


def locate_spec_error(inv: Inventory, name: str, validate, problem: str = "") -> str | None:
    """The file whose own ``nodegate:`` fragment ``validate`` (``fragment, source -> None``,
    raising SpecError ``"<source>: <problem>"``) refuses with the same ``problem`` (key and
    reason) as the merged spec, highest precedence first: its error message names that file and
    the key; None when no fragment alone has that problem (the merge made it)."""
    try:
        frags = spec_fragments(inv, name)
    except Exception:  # noqa: BLE001 - best effort: the merged message stays
        return None
    a = ansible()
    for src, frag in frags:
        try:
            frag = a["Templar"](loader=inv._loader, variables={}).template(frag)
        except Exception:  # noqa: BLE001 - a fragment that needs the host's variables: as written
            pass
        label = f"{src} (nodegate: of host {name})"
        try:
            validate(plain(frag) if isinstance(frag, dict) else {"__invalid__": plain(frag)}, label)
        except SpecError as e:
            if not problem or str(e).removeprefix(label + ": ") == problem:
                return str(e)
    return None
