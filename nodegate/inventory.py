"""Ansible inventories, resolved by ansible-core itself.

Sources: whatever ``ansible -i SOURCE`` accepts with the operator's Ansible configuration (the
default inventory plugins: YAML and INI files, inventory directories, ``host1,host2,`` lists,
TOML, executable inventory scripts), with ``group_vars/`` and ``host_vars/`` beside the source
(files, folders, nested folders, ``.yml/.yaml/.json``). Parsing, host ranges, ``host:port``,
nested children, variable precedence (group depth, ``ansible_group_priority``, group name;
vars files over inline vars), Jinja templating and host patterns are ansible-core's own:

- ``InventoryManager`` parses the sources; ``inventory.subset(limit)`` +
  ``get_hosts("all")`` select hosts exactly as ``ansible --limit`` does (``:``, ``,``, ``:&``,
  ``:!``, ``~regex``, ``@file``, subscripts, wildcards), in Ansible's host order;
- ``VariableManager.get_vars(host=...)`` gives each host's variables;
- the connection values come from the connection plugin itself, as Ansible's TaskExecutor gets
  them: ``connection_loader.get(<ansible_connection>)``, ``set_options(var_options=<the plugin's
  variables, templated with the host's variables>)``, then ``get_option("host"/"remote_addr",
  "port", "remote_user", "private_key_file", "password")``. Only this gets alias precedence right
  (the plugin reads its option's variable list and the last one defined wins: the all group's
  ``ansible_ssh_user`` beats a group file's ``ansible_user``; ../shared/spec/testbed-notes.md);
- the ``nodegate:`` spec is deep-merged from all -> groups (Ansible's order) -> host, unlike
  Ansible's default ``hash_behaviour=replace``: it is the ``nodegate`` variable of a second
  ``get_vars`` with ansible-core's own ``hash_behaviour=merge`` (Ansible's ``merge_hash``), over
  the same sources, templated. Every other variable keeps Ansible's replace semantics.

Connections: ansible-core's ``ssh`` (Ansible's default; ``smart`` where ansible-core resolves it to
ssh, paramiko when the OpenSSH client is absent) -> nodegate's OpenSSH transport, except for a host
with a password (Ansible logs in through sshpass there; nodegate runs OpenSSH in batch mode, which
takes no password): the paramiko transport, with the same known_hosts policy and deadlines;
``paramiko``/``paramiko_ssh`` -> the paramiko transport; ``local`` -> local. Several sources
(``ansible -i A -i B``) are one ``InventoryManager`` over all of them, in the order given. Anything
nodegate cannot do as Ansible would is refused (``InventoryError``, a ``SpecError``; the plugin exits 2 naming the host
and the value): another connection plugin (winrm, docker...), ``ansible_ssh_common_args``/``ansible_ssh_extra_args``/
``ansible_ssh_args``, inline ``ansible_ssh_private_key``, a ``ansible_become_method`` other than
sudo or a ``ansible_become_user`` other than root, a port that is no integer, a host name that
is not usable as a bundle directory name (nodegate.bundle.safe_node_dirname).

Ansible is told to refuse what it would otherwise only warn about (ansible-core configuration,
set for this process before ansible is imported): duplicated YAML keys
(``DUPLICATE_YAML_DICT_KEY=error``) and unparsable sources (``INVENTORY_UNPARSED_IS_FAILED``,
``INVENTORY_ANY_UNPARSED_IS_FAILED``). Every error is an ``InventoryError`` carrying Ansible's own
message and the source; Ansible's warnings are kept in ``Inventory.warnings``.

One module because it is the one adapter to ansible-core's inventory: loading, host
patterns, connection variables and the merged spec must agree on one InventoryManager.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from .ansible_core import LOCK, ansible, captured, msg, plain
from .dotted import holds_path  # noqa: F401  (nodegate.inventory.holds_path: its callers)
from .errors import InventoryError, SpecError
from .hostpatterns import match_groups, select_names  # noqa: F401 - nodegate.inventory's public names

SPEC_VAR = "nodegate"

#: ansible-core connection plugin (its load name) -> nodegate transport
TRANSPORTS = {"ssh": "ssh", "paramiko_ssh": "paramiko", "local": "local"}
#: the connection plugin's option holding the address (ansible-core's plugin documentation)
ADDRESS_OPTION = {"ssh": "host", "paramiko_ssh": "remote_addr"}
#: variables nodegate's transports cannot honour: refused rather than silently ignored
UNSUPPORTED_VARS = {
    "ansible_ssh_common_args": "extra OpenSSH options",
    "ansible_ssh_extra_args": "extra OpenSSH options",
    "ansible_ssh_args": "OpenSSH options",
    "ansible_ssh_private_key": "an inline private key",
    "ansible_private_key": "an inline private key",
    "ansible_paramiko_proxy_command": "a paramiko proxy command",
    "ansible_ssh_executable": "another ssh executable",
}
@dataclass(frozen=True)
class Host:
    """One inventory host as nodegate will connect to it.

    ``connection``: nodegate transport (ssh | paramiko | local); ``address``: the connection
    plugin's host/remote_addr option, else the inventory name (Ansible's ``host.address``);
    ``port``: int or None (the client's default, 22 or ~/.ssh/config); ``user``: None = the
    client's default; ``key_file``: expanded path or None; ``password`` never shown (``repr``,
    ``listing``); ``become``: ``ansible_become`` (the probe runs with ``sudo -n``); ``groups``:
    Ansible's order (depth, priority, name); ``spec_raw``: the deep-merged ``nodegate`` variable;
    ``sources``: the inventory sources; ``plugin``: the ansible-core connection plugin used."""

    name: str
    connection: str
    address: str | None = None
    port: int | None = None
    user: str | None = None
    key_file: str | None = None
    password: str | None = field(default=None, repr=False)
    become: bool = False
    groups: tuple[str, ...] = ()
    spec_raw: dict = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    plugin: str = ""
    #: the plugin's host_key_checking (False: the inventory turns it off; nodegate verifies anyway)
    host_key_checking: bool | None = None

    def url(self) -> str:
        """testinfra host URL (``paramiko://user:pw@[addr]:port?ssh_identity_file=...``, ``ssh://...``,
        ``local://``); holds the password: never stored or shown (``redacted_url``)."""
        if self.connection == "local":
            return "local://"
        host = str(self.address or self.name)
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        auth = ""
        user = self.user
        if user is None and self.password is not None:
            # a password without a user: OpenSSH (Ansible's ssh + sshpass) logs in as the local user
            import getpass
            user = getpass.getuser()
        if user:
            auth = urllib.parse.quote(str(user), safe="")
            if self.password is not None:
                auth += ":" + urllib.parse.quote(str(self.password), safe="")
            auth += "@"
        url = f"{self.connection}://{auth}{host}" + (f":{self.port}" if self.port else "")
        query = []
        if self.key_file:
            query.append("ssh_identity_file=" + urllib.parse.quote(self.key_file, safe="/"))
        if self.become:   # testinfra's ?sudo=true: the probe runs with sudo -n (nodegate.transport)
            query.append("sudo=true")
        return url + ("?" + "&".join(query) if query else "")

    def redacted_url(self) -> str:
        """url() without the password: what reports and bundles may show."""
        return redact_url(self.url())

    @property
    def ansible_connection(self) -> str:
        """The ansible-core connection plugin's short name (``ssh``, ``paramiko_ssh``, ``local``)."""
        return self.plugin.rsplit(".", 1)[-1] if self.plugin else self.connection

    @property
    def password_login(self) -> bool:
        """Ansible would log in with ``ssh`` + sshpass; nodegate uses its paramiko transport."""
        return self.ansible_connection == "ssh" and self.connection == "paramiko"

    def listing(self) -> dict:
        """``--list-hosts`` row: name, address, port, user, key_file, connection (nodegate's
        transport), ansible_connection (ansible-core's plugin), password_set, become, groups (no
        password)."""
        return {"name": self.name, "address": self.address, "port": self.port, "user": self.user,
                "key_file": self.key_file, "connection": self.connection,
                "ansible_connection": self.ansible_connection,
                "password_set": self.password is not None, "become": self.become, "groups": list(self.groups)}


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


#: ansible-core warnings that mean part of the inventory was dropped (its yaml plugin skips an
#: unknown group key or a group that is not a mapping and goes on): refused, a typo such as
#: ``hostz:`` must not silently test fewer nodes
DROPPED = ("Skipping unexpected key", "as this is not a valid group definition", "Skipping invalid")


#: a DNS name (RFC 1123 labels; "_" too, as resolvers accept it)
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$")


def redact_address(addr: str) -> str:
    """``addr`` as a message may show it: userinfo before the last "@" (``user:secret@host``,
    ``ssh://u:pw@h``) has its password part replaced by ``***`` (issue 37.9: a refused
    ansible_host was echoed with the password in it). ``root:hunter2@10.0.0.1`` ->
    ``root:***@10.0.0.1``; no "@": unchanged."""
    if "@" not in addr:
        return addr
    userinfo, host = addr.rsplit("@", 1)
    scheme = ""
    if "://" in userinfo:
        scheme, userinfo = userinfo.split("://", 1)
        scheme += "://"
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{user}{':***' if ':' in userinfo else ''}@{host}"


def address_problem(addr: str) -> str | None:
    """Why ``addr`` (ansible_host, else the inventory name) is not an address nodegate connects to,
    or None: an IPv4/IPv6 address (a zone id allowed) or a DNS name. Anything else (a leading "-"
    that OpenSSH would read as an option, "user@host", "host:port", "?query", "#", "ssh://...",
    spaces) is refused: it would change the connection instead of naming a host."""
    import ipaddress
    try:
        ipaddress.ip_address(addr.split("%", 1)[0] if ":" in addr else addr)
        return None
    except ValueError:
        pass
    if _HOSTNAME.match(addr):
        return None
    return ("is not a host name or IP address (put the port in ansible_port and the user in ansible_user; "
            "nothing else belongs there)")


class Inventory:
    """An inventory source parsed by ansible-core. ``names``: every host in Ansible's order;
    ``select(limit)`` resolves the hosts a run targets; ``hosts``: every host resolved."""

    def __init__(self, source: str | list[str] | tuple[str, ...]):
        sources = [str(source)] if isinstance(source, (str, Path)) else [str(x) for x in source]
        if not sources:
            raise InventoryError("no inventory source given")
        # a path that does not exist is said so (ansible-core would report "Completely failed to
        # parse inventory source" after every plugin failed); "h1,h2," host lists are no paths
        for src in sources:
            if "," not in src and not Path(src).expanduser().exists():
                raise InventoryError(f"inventory {src}: no such file or directory")
        a = ansible()
        self.sources = tuple(sources)
        #: how the sources are named in messages and reports: "hosts.yml", or "common.ini + site.yml"
        self.source = sources_label(sources)
        self.warnings: list[str] = []
        self._loader = a["DataLoader"]()
        try:
            with captured(self.warnings):
                # several sources: ansible-core merges them in the order given, as ``ansible -i A -i B``
                self._im = a["InventoryManager"](loader=self._loader, sources=list(sources))
        except a["AnsibleError"] as e:
            raise InventoryError(f"inventory {self.source}: ansible-core refused it: {msg(e)}"
                            + self._details()) from None
        dropped = [w for w in self.warnings if any(d in w for d in DROPPED)]
        if dropped:
            raise InventoryError(f"inventory {self.source}: ansible-core skipped part of it: " + "; ".join(dropped[:3]))
        self._vm = a["VariableManager"](loader=self._loader, inventory=self._im)
        self._vm_merge = a["VariableManager"](loader=self._loader, inventory=self._im)
        self._cache: dict[str, Host] = {}
        # one connection plugin object per plugin name: set_options() recomputes every option
        # from the host's variables each time (plugin construction was ~40 % of a host's cost)
        self._plugins: dict[str, object] = {}
        # one PlayContext resolves every host's connection name ("smart"): 5 us a host, 22 us with
        # a new one each (4,096 hosts)
        self._play_context = a["PlayContext"]()
        self.names = [h.name for h in self._im.get_hosts("all")]
        if not self.names:
            raise InventoryError(f"inventory {self.source}: no hosts defined" + self._details())

    @property
    def path(self) -> Path:
        """The first source (the one whose folder holds a multi-source run's reports context)."""
        return Path(self.sources[0])

    def _details(self) -> str:
        """Ansible's own reasons (its warnings: one per inventory plugin that tried), the
        plugin that fits the file's kind first, each cut to 400 characters."""
        if not self.warnings:
            return ""
        kind = "'ini'" if Path(self.sources[0]).suffix in ("", ".ini", ".cfg") else "'yaml'"
        ws = sorted(self.warnings, key=lambda w: kind not in w)
        return "; " + "; ".join(w if len(w) <= 400 else w[:399] + "…" for w in ws[:3])

    def select(self, limit: str | None) -> list[Host]:
        """The hosts ``ansible -i SOURCE all --limit LIMIT`` targets, in its order, resolved.
        Raises SpecError when the pattern matches no host (naming it) or a host is unusable."""
        return [self.host(n) for n in self.select_names(limit)]

    def select_names(self, limit: str | None) -> list[str]:
        if not limit:
            return list(self.names)
        a = ansible()
        warns: list[str] = []
        try:
            with captured(warns):
                self._im.subset(limit)
                names = [h.name for h in self._im.get_hosts("all")]
        except a["AnsibleError"] as e:
            raise InventoryError(f"--limit {limit!r}: {msg(e)}") from None
        finally:
            self._im.subset(None)
        self.warnings.extend(w for w in warns if w not in self.warnings)
        if not names:
            raise InventoryError(f"--limit {limit!r} matches no host in {self.source}"
                            + ("; " + "; ".join(warns) if warns else ""))
        return names

    @property
    def hosts(self) -> dict[str, Host]:
        return {n: self.host(n) for n in self.names}

    def host(self, name: str) -> Host:
        h = self._cache.get(name)
        if h is None:
            h = self._cache[name] = self._resolve(name)
        return h

    # ------------------------------------------------------------------ one host
    def _resolve(self, name: str) -> Host:
        a = ansible()
        from .bundle import safe_node_dirname
        try:
            safe_node_dirname(name)
        except ValueError:
            raise InventoryError(f"inventory {self.source}: host {name!r}: the name is not usable as a bundle "
                            "directory name (letters, digits, '.', '_', '-'; not '.' or '..'): name the host "
                            "so and put its address in ansible_host") from None
        ah = self._im.get_host(name)
        where = f"inventory {self.source}: host {name}"
        try:
            with captured(self.warnings):
                hv = self._vm.get_vars(host=ah, include_hostvars=True)
                t = a["Templar"](loader=self._loader, variables=hv)
                conn_name = str(t.template(hv.get("ansible_connection") or a["C"].DEFAULT_TRANSPORT))
                # "smart" (and "persistent") resolved by ansible-core itself: PlayContext.connection is
                # a ConnectionFieldAttribute (ansible/playbook/attribute.py) that gives ssh, or paramiko
                # where the OpenSSH client is absent or lacks ControlPersist, as TaskExecutor does
                self._play_context.connection = conn_name
                conn_name = str(self._play_context.connection)
                for var, what in UNSUPPORTED_VARS.items():
                    if hv.get(var) not in (None, ""):
                        raise InventoryError(f"{where}: {var} ({what}) is not supported by nodegate's transports "
                                        "(put ssh options in ~/.ssh/config; connection ssh reads it)")
                conn = self._plugins.get(conn_name)
                if conn is None:
                    conn = self._plugins[conn_name] = a["connection_loader"].get(conn_name, a["PlayContext"](), None)
                if conn is None:
                    raise InventoryError(f"{where}: ansible_connection {conn_name!r}: no such ansible-core "
                                    "connection plugin")
                plugin = conn._load_name.rsplit(".", 1)[-1]
                if plugin not in TRANSPORTS:
                    raise InventoryError(f"{where}: ansible_connection {conn_name!r} is not supported by nodegate "
                                    "(ssh, paramiko, local)")
                values = self._connection_values(conn, plugin, hv, t, where) if plugin != "local" else {}
                become = self._become(hv, t, where)
                spec = self._spec(ah, where)
        except SpecError:
            raise
        except a["AnsibleError"] as e:
            raise InventoryError(f"{where}: {msg(e)}") from None
        groups = tuple(str(g.name) for g in a["sort_groups"](ah.get_groups()))
        transport = TRANSPORTS[plugin]
        if plugin == "ssh" and values.get("password") is not None:
            # Ansible's ssh plugin logs in with a password through sshpass; nodegate runs OpenSSH in
            # batch mode (no prompt), so such a host gets nodegate's paramiko transport: the same
            # known_hosts policy and deadlines, the password kept in this process (docs/inventory.md)
            transport = "paramiko"
        return Host(name=name, connection=transport, become=become, groups=groups, spec_raw=spec,
                    sources=self.sources, plugin=conn._load_name, **values)

    def _connection_values(self, conn, plugin: str, hv: dict, t, where: str) -> dict:
        """What the connection plugin resolved from the host's templated variables (Ansible's
        TaskExecutor: ``_resolve_option_variables`` then ``set_options``)."""
        a = ansible()
        try:
            conn.set_options(var_options=conn._resolve_option_variables(hv, t))
        except a["AnsibleError"] as e:
            raise InventoryError(f"{where}: {msg(e)} (values: port {hv.get('ansible_port', hv.get('ansible_ssh_port'))!r})") \
                from None

        def opt(o):
            try:
                return conn.get_option(o)
            except KeyError:
                return None
        port = opt("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
            raise InventoryError(f"{where}: port {port!r} is not a TCP port number")
        key = opt("private_key_file")
        password = opt("password")
        addr = opt(ADDRESS_OPTION[plugin]) or self._im.get_host(hv["inventory_hostname"]).address
        if plugin != "local":
            why = address_problem(str(addr))
            if why:
                raise InventoryError(f"{where}: ansible_host {redact_address(str(addr))[:200]!r} {why}")
        hkc = opt("host_key_checking")
        return {"address": str(addr), "port": port, "user": None if opt("remote_user") is None else str(opt("remote_user")),
                "key_file": os.path.expanduser(str(key)) if key else None,
                "password": None if password is None else str(password),
                "host_key_checking": None if hkc is None else bool(hkc)}

    @staticmethod
    def _become(hv: dict, t, where: str) -> bool:
        from ansible.module_utils.parsing.convert_bool import boolean
        if hv.get("ansible_become") is None:
            return False
        become = boolean(t.template(hv["ansible_become"]), strict=False)
        if become:
            method = t.template(hv.get("ansible_become_method") or "sudo")
            user = t.template(hv.get("ansible_become_user") or "root")
            if method not in ("sudo", "ansible.builtin.sudo"):
                raise InventoryError(f"{where}: ansible_become_method {method!r} is not supported (nodegate runs the "
                                "probe with sudo -n)")
            if user != "root":
                raise InventoryError(f"{where}: ansible_become_user {user!r} is not supported (the probe runs as root "
                                "through sudo -n)")
            if t.template(hv.get("ansible_connection") or "") == "local":
                raise InventoryError(f"{where}: ansible_become with a local connection: use --sudo")
        return become

    def _spec(self, ah, where: str) -> dict:
        """The ``nodegate`` variable under ansible-core's ``hash_behaviour=merge``, templated."""
        a = ansible()
        C = a["C"]
        with LOCK:
            old = C.DEFAULT_HASH_BEHAVIOUR
            C.DEFAULT_HASH_BEHAVIOUR = "merge"   # read by ansible.utils.vars.combine_vars at call time
            try:
                mv = self._vm_merge.get_vars(host=ah, include_hostvars=True)
            finally:
                C.DEFAULT_HASH_BEHAVIOUR = old
        raw = mv.get(SPEC_VAR)
        if raw is None:
            return {}
        v = a["Templar"](loader=self._loader, variables=mv).template(raw)
        return plain(v) if isinstance(v, dict) else {"__invalid__": plain(v)}


    def spec_origins(self, name: str, dotted: str) -> list[str]:
        """Where host ``name``'s ``nodegate`` variable sets the key ``dotted`` (``gpu.count``,
        ``gpu.bus_ids[0]``: a spec error's key without ``nodegate.``), in Ansible's order (the last
        one is the value the merge kept): ``group_vars/``/``host_vars/`` files beside each source,
        found as ansible-core's ``host_group_vars`` plugin finds them (``DataLoader.find_vars_files``),
        and the inline vars of a group or host (named by the inventory sources). Raw values, not
        templated: this only names files for a message; the spec itself is ``Host.spec_raw``."""
        path = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", dotted)]
        if not path:
            return []
        a = ansible()
        ah = self._im.get_host(name)
        if ah is None:
            return []
        entities = [("group", g) for g in a["sort_groups"](ah.get_groups())] + [("host", ah)]
        bases = []
        for src in self.sources:
            if "," in src:
                continue
            p = Path(src).expanduser().resolve()
            bases.append(p if p.is_dir() else p.parent)
        out: list[str] = []
        for kind, e in entities:
            if holds_path(e.vars.get(SPEC_VAR), path):
                out.append(f"{self.source} ({kind} {e.name}'s vars)")
            for base in bases:
                sub = base / ("group_vars" if kind == "group" else "host_vars")
                try:
                    files = self._loader.find_vars_files(str(sub), e.name) if sub.is_dir() else []
                    for f in files:
                        data = self._loader.load_from_file(str(f), unsafe=True)
                        if isinstance(data, dict) and holds_path(data.get(SPEC_VAR), path):
                            out.append(str(f))
                except a["AnsibleError"]:
                    continue
        return out


def load_inventory(source: str | Path | list | tuple) -> Inventory:
    """Parse inventory sources with ansible-core (each a file, a directory, or ``h1,h2,``; several
    are merged in order as ``ansible -i A -i B`` merges them). Raises SpecError with Ansible's
    message and the sources."""
    return Inventory(source if isinstance(source, (list, tuple)) else str(source))


def sources_label(sources) -> str:
    """How inventory sources are named in messages and reports: ``hosts.yml``, or ``common.ini +
    site.yml`` for several (in the order ansible-core merges them). ``None``/empty -> ``""``."""
    if not sources:
        return ""
    if isinstance(sources, (str, Path)):
        return str(sources)
    return " + ".join(str(x) for x in sources)
