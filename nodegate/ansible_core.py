"""ansible-core, imported once for nodegate's inventories (nodegate/inventory.py).

``ansible()`` imports ansible-core with the settings nodegate needs (``ANSIBLE_SETTINGS``, put in
the environment before the import: ansible-core reads them there, duplicate keys at parse time,
and set on ``ansible.constants`` in case ansible was imported before); ``captured()`` collects
Ansible's warnings (its Display writes them to ``sys.stderr``); ``plain()`` turns ansible-core
2.19's tagged values into plain Python ones; ``msg()`` puts an AnsibleError on one line.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading

#: ansible-core settings nodegate needs (ansible-core config/base.yml; environment names)
ANSIBLE_SETTINGS = {
    "ANSIBLE_DUPLICATE_YAML_DICT_KEY": "error",        # DUPLICATE_YAML_DICT_KEY
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",       # INVENTORY_UNPARSED_IS_FAILED
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
    "ANSIBLE_NOCOLOR": "1",
}

LOCK = threading.Lock()
_ANSIBLE: dict = {}


def ansible() -> dict:
    """ansible-core's modules, imported once with ANSIBLE_SETTINGS in force. The settings are
    put in the environment (ansible-core reads them there; duplicate keys at parse time) and on
    ``ansible.constants`` (read at import, in case ansible was imported before us)."""
    with LOCK:
        if _ANSIBLE:
            return _ANSIBLE
        os.environ.update(ANSIBLE_SETTINGS)
        from ansible import constants as C
        from ansible.errors import AnsibleError
        from ansible.inventory.helpers import sort_groups
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader
        from ansible.playbook.play_context import PlayContext
        from ansible.plugins.loader import connection_loader, init_plugin_loader
        from ansible.template import Templar
        from ansible.vars.manager import VariableManager
        C.INVENTORY_UNPARSED_IS_FAILED = True
        C.INVENTORY_ANY_UNPARSED_IS_FAILED = True
        with captured():
            init_plugin_loader()
        _ANSIBLE.update(C=C, AnsibleError=AnsibleError, InventoryManager=InventoryManager, DataLoader=DataLoader,
                        VariableManager=VariableManager, Templar=Templar, PlayContext=PlayContext,
                        connection_loader=connection_loader, sort_groups=sort_groups)
        return _ANSIBLE


@contextlib.contextmanager
def captured(into: list[str] | None = None):
    """Ansible's Display writes warnings to ``sys.stderr`` at call time: collect them (one per
    line, ``[WARNING]: ...``) instead of letting them reach pytest's terminal unannounced. Every
    block gets the warnings of its own calls: the Display shows a warning once a process (its
    ``_warns``), so a second ``--limit rack1,rack9`` in the process (``--list-hosts`` resolves the
    hosts again, a baseline's names) would otherwise say nothing of rack9."""
    display = _display()
    seen = getattr(display, "_warns", None)
    if isinstance(seen, set):
        display._warns = set()
    buf = io.StringIO()
    old = sys.stderr
    sys.stderr = buf
    try:
        yield buf
    finally:
        sys.stderr = old
        if isinstance(seen, set):
            display._warns = seen | display._warns
        if into is not None:
            into.extend(m for m in messages(buf.getvalue()) if m not in into)


def _display():
    """ansible-core's Display (a singleton) once ansible-core is imported, else None."""
    mod = sys.modules.get("ansible.utils.display")
    try:
        return mod.Display() if mod is not None else None
    except Exception:  # noqa: BLE001 - no Display to reset: ansible-core's dedup stays
        return None


#: Ansible messages about Ansible itself, not about the inventory: nodegate only resolves the
#: paramiko plugin's options (its own transport connects), so that plugin's deprecation is noise
_IGNORED = ("[DEPRECATION WARNING]: The paramiko connection plugin is deprecated",
            "[WARNING]: Deprecation warnings can be disabled")


def messages(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("[") and "]:" in line[:40]:
            out.append(line.strip())
        elif out and line.strip():
            out[-1] += " " + line.strip()
    return [m for m in out if not m.startswith(_IGNORED)]


def msg(e: BaseException) -> str:
    return " ".join(str(e).split())


def plain(v):
    """ansible-core 2.19 returns tagged str/int/dict subclasses: plain Python values for pydantic,
    YAML and JSON."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    for t in (bool, int, float, str):
        if isinstance(v, t):
            return t(v)
    return v
