"""Ansible-format YAML inventories: hosts, groups, vars, group_vars/ and host_vars/.

Supported (the subset operators use for static inventories):
``all:`` with ``hosts``, ``children`` (nested groups) and ``vars``; ``group_vars/<group>.yml|.yaml``
or ``group_vars/<group>/*.yml`` and ``host_vars/<host>.yml`` beside the inventory file; connection
variables ``ansible_host``, ``ansible_port``, ``ansible_user``, ``ansible_ssh_private_key_file``,
``ansible_connection`` (``ssh``/``paramiko``/``local``), ``ansible_password`` (never logged).

Variable precedence, lowest first (as Ansible): all's inline vars, group_vars/all, each group
from parent to child (inline vars then group_vars/<group>), host inline vars, host_vars/<host>.
Unlike Ansible's default ``hash_behaviour=replace``, the ``nodegate:`` mapping is deep-merged so
a group can set the driver and a host override one PCIe value (documented in README).

``--limit`` patterns follow Ansible: ``a,b`` or ``a:b`` union, ``*`` wildcards, ``!x`` exclude,
``&x`` intersect; each term matches host or group names.

Errors: ``SpecError`` naming the file and the key.
"""

from __future__ import annotations

import fnmatch
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import yamlio
from .errors import SpecError

SPEC_VAR = "nodegate"


@dataclass
class Host:
    name: str
    vars: dict = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)   # every group it belongs to, ancestors first
    sources: list[str] = field(default_factory=list)  # files its vars came from

    @property
    def spec_raw(self) -> dict:
        v = self.vars.get(SPEC_VAR) or {}
        return v if isinstance(v, dict) else {"__invalid__": v}

    def url(self) -> str:
        """testinfra host URL built from the connection variables."""
        conn = str(self.vars.get("ansible_connection", "paramiko"))
        if conn == "local":
            return "local://"
        if conn not in ("ssh", "paramiko"):
            where = f"{self.sources[0]}: " if self.sources else ""
            raise SpecError(f"{where}host {self.name}: ansible_connection {conn!r} not supported "
                            "(ssh, paramiko, local)")
        host = str(self.vars.get("ansible_host", self.name))
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        user = self.vars.get("ansible_user")
        pw = self.vars.get("ansible_password")
        port = self.vars.get("ansible_port")
        auth = ""
        if user:
            auth = urllib.parse.quote(str(user), safe="")
            if pw:
                auth += ":" + urllib.parse.quote(str(pw), safe="")
            auth += "@"
        url = f"{conn}://{auth}{host}" + (f":{int(port)}" if port else "")
        key = self.vars.get("ansible_ssh_private_key_file")
        if key:
            url += "?ssh_identity_file=" + urllib.parse.quote(str(Path(str(key)).expanduser()), safe="/")
        return url

    def redacted_url(self) -> str:
        """url() without the password: what reports and bundles may show."""
        return redact_url(self.url())


def redact_url(url: str) -> str:
    """A testinfra URL with any password replaced by ``***`` (``paramiko://u:pw@h:22`` ->
    ``paramiko://u:***@h:22``). Used for everything that is written or shown."""
    try:
        p = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable target>"
    if p.password is None:
        return url
    netloc = p.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urllib.parse.urlunsplit(p._replace(netloc=f"{user}:***@{netloc[1]}"))


def _load_yaml(path: Path) -> object:
    try:
        with open(path) as fh:
            return yamlio.safe_load(fh)
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: not valid YAML: {e}") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None


def _vars_file(base: Path, name: str) -> list[tuple[Path, dict]]:
    out = []
    for ext in (".yml", ".yaml", ""):
        p = base / f"{name}{ext}"
        if p.is_file():
            out.append((p, _load_yaml(p)))
    d = base / name
    if d.is_dir():
        for p in sorted(d.iterdir()):
            if p.suffix in (".yml", ".yaml") and p.is_file():
                out.append((p, _load_yaml(p)))
    for p, v in out:
        if v is not None and not isinstance(v, dict):
            raise SpecError(f"{p}: expected a mapping of variables, got {type(v).__name__}")
    return [(p, v or {}) for p, v in out]


def _merge(dst: dict, src: dict) -> dict:
    for k, v in src.items():
        if k == SPEC_VAR and isinstance(v, dict) and isinstance(dst.get(k), dict):
            dst[k] = _deep(dict(dst[k]), v)
        else:
            dst[k] = v
    return dst


def _deep(a: dict, b: dict) -> dict:
    for k, v in b.items():
        a[k] = _deep(dict(a[k]), v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return a


@dataclass
class Inventory:
    path: Path
    hosts: dict[str, Host]
    groups: dict[str, list[str]]  # group -> host names (recursive)

    def select(self, limit: str | None) -> list[Host]:
        if not limit:
            return list(self.hosts.values())
        names = select_names(limit, self.hosts, self.groups)
        if not names:
            raise SpecError(f"--limit {limit!r} matches no host in {self.path}")
        return [self.hosts[n] for n in self.hosts if n in names]


def select_names(limit: str, hosts: dict, groups: dict[str, list[str]]) -> set[str]:
    terms = [t for t in limit.replace(":", ",").split(",") if t.strip()]
    sel: set[str] = set()
    plus = [t.strip() for t in terms if t.strip()[0] not in "!&"]
    for t in plus:
        sel |= _match(t, hosts, groups)
    if not plus:
        sel = set(hosts)
    for t in terms:
        t = t.strip()
        if t.startswith("&"):
            sel &= _match(t[1:], hosts, groups)
        elif t.startswith("!"):
            sel -= _match(t[1:], hosts, groups)
    return sel


def _match(pat: str, hosts, groups) -> set[str]:
    out = {h for h in hosts if fnmatch.fnmatchcase(h, pat)}
    for g, members in groups.items():
        if fnmatch.fnmatchcase(g, pat):
            out |= set(members)
    return out


def load_inventory(path: str | Path) -> Inventory:
    """Parse an Ansible YAML inventory (+ group_vars/, host_vars/ beside it).

    Raises SpecError (file, key, reason) on any structural problem.
    """
    path = Path(path)
    data = _load_yaml(path)
    if not isinstance(data, dict) or not data:
        raise SpecError(f"{path}: expected a mapping with a top-level 'all:' group")
    base = path.parent
    hosts: dict[str, Host] = {}
    groups: dict[str, list[str]] = {}
    inline: dict[str, dict] = {}

    def walk(gname: str, g: object, chain: list[str], keypath: str):
        if g is None:
            g = {}
        if not isinstance(g, dict):
            raise SpecError(f"{path}: {keypath}: expected a mapping (hosts/children/vars), got {type(g).__name__}")
        bad = set(g) - {"hosts", "children", "vars"}
        if bad:
            raise SpecError(f"{path}: {keypath}: unknown key(s) {sorted(bad)} (expected hosts, children, vars)")
        gv = g.get("vars") or {}
        if not isinstance(gv, dict):
            raise SpecError(f"{path}: {keypath}.vars: expected a mapping")
        inline.setdefault(gname, {})
        _merge(inline[gname], gv)
        chain = chain + [gname]
        members = groups.setdefault(gname, [])
        hs = g.get("hosts") or {}
        if isinstance(hs, list):
            hs = {h: {} for h in hs}
        if not isinstance(hs, dict):
            raise SpecError(f"{path}: {keypath}.hosts: expected a mapping of host names")
        for hn, hv in hs.items():
            hn = str(hn)
            if hv is not None and not isinstance(hv, dict):
                raise SpecError(f"{path}: {keypath}.hosts.{hn}: expected a mapping of variables")
            h = hosts.setdefault(hn, Host(hn))
            for c in chain:
                if c not in h.groups:
                    h.groups.append(c)
            _merge(h.vars.setdefault("__inline__", {}), hv or {})
            for c in chain:
                if hn not in groups.setdefault(c, []):
                    groups[c].append(hn)
            if hn not in members:
                members.append(hn)
        ch = g.get("children") or {}
        if not isinstance(ch, dict):
            raise SpecError(f"{path}: {keypath}.children: expected a mapping of groups")
        for cn, cv in ch.items():
            walk(str(cn), cv, chain, f"{keypath}.children.{cn}")

    top = {k: v for k, v in data.items()}
    if "all" not in top:
        # Ansible also accepts top-level groups; treat them as children of all.
        top = {"all": {"children": top}}
    if set(top) - {"all"}:
        top = {"all": {**(top["all"] or {}), "children": {**((top["all"] or {}).get("children") or {}),
                                                          **{k: v for k, v in top.items() if k != "all"}}}}
    walk("all", top["all"], [], "all")

    gvars = {g: _vars_file(base / "group_vars", g) for g in groups}
    for hn, h in hosts.items():
        merged: dict = {}
        srcs = [str(path)]
        for g in h.groups:  # ancestors first
            _merge(merged, inline.get(g, {}))
            for p, v in gvars.get(g, []):
                _merge(merged, v)
                srcs.append(str(p))
        _merge(merged, h.vars.pop("__inline__", {}))
        for p, v in _vars_file(base / "host_vars", hn):
            _merge(merged, v)
            srcs.append(str(p))
        h.vars = merged
        h.sources = srcs
    if not hosts:
        raise SpecError(f"{path}: no hosts defined")
    return Inventory(path, hosts, groups)
