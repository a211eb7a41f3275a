"""Ansible host patterns on node names without an inventory file, matched by ansible-core.

``select_names``: ``--limit`` on replayed bundles or a baseline's nodes (names alone);
``match_groups``: a site module's ``testinfra_hosts: ansible://PATTERN`` on the run's nodes and
their inventory groups (nodegate.site.hosts), the same on a live run and on ``--replay``.
Both build an ansible-core ``InventoryManager`` of those names (its ``host_list`` source: node
names are bundle directory names, letters, digits, '.', '_', '-', which it takes as they are)
and ask its ``get_hosts``: every pattern form is ansible-core's own.
"""

from __future__ import annotations

from .ansible_core import ansible, captured, msg
from .errors import InventoryError


def select_names(limit: str | None, names, warnings: list[str] | None = None) -> list[str]:
    """``names`` (nodes without an inventory: replayed bundles, a baseline) that the Ansible host
    pattern ``limit`` selects, matched by ansible-core on an inventory of those names alone, in
    the given order; ansible-core's warnings (a part matching nothing: "Could not match supplied
    host pattern, ignoring: X") added to ``warnings``. Raises SpecError when the pattern is invalid."""
    names = list(names)
    if not limit:
        return names
    a = ansible()
    loader = a["DataLoader"]()
    with captured(warnings):
        im = a["InventoryManager"](loader=loader, sources=[",".join(names) + ","])
        try:
            im.subset(limit)
            got = {h.name for h in im.get_hosts("all")}
        except a["AnsibleError"] as e:
            raise InventoryError(f"--limit {limit!r}: {msg(e)}") from None
    return [n for n in names if n in got]


def match_groups(patterns: list[str], names, groups: dict[str, list[str]]) -> list[str]:
    """``names`` (in order) that any of the Ansible host ``patterns`` selects, given each name's
    groups (``groups[name]``: ancestors included, as ansible-core's ``Host.groups``): matched by
    ansible-core's ``InventoryManager.get_hosts`` on an inventory of these names and groups alone
    (groups, names, ``:``, ``:&``, ``:!``, ``~regex``, wildcards). A pattern that matches nothing
    adds nothing. Raises InventoryError for a pattern ansible-core refuses."""
    names = list(names)
    if not names:
        return []
    a = ansible()
    got: set[str] = set()
    with captured():
        im = a["InventoryManager"](loader=a["DataLoader"](), sources=[",".join(names) + ","])
        for n in names:
            for g in groups.get(n, ()):
                if g in ("all", "ungrouped"):
                    continue
                im.add_group(g)
                im.add_host(n, group=g)
        for p in patterns:
            try:
                got.update(h.name for h in im.get_hosts(p))
            except a["AnsibleError"] as e:
                raise InventoryError(f"host pattern {p!r}: {msg(e)}") from None
    return [n for n in names if n in got]