"""Connection plugins for the compatibility test: ansible-core's own ssh, paramiko_ssh and local
plugins, unchanged, except that "connecting" prints the options Ansible resolved for the host
instead of opening a connection (so the test never sends a packet anywhere).

ansible-core loads a plugin named like a built-in from ANSIBLE_CONNECTION_PLUGINS first; each
module here loads the real plugin from ansible's package by path, keeps its DOCUMENTATION (the
options and the variables each reads, in Ansible's order) and subclasses its Connection. The
options are set by Ansible's TaskExecutor exactly as for a real run (``set_options(var_options=
<the host's templated variables>)``); only ``_connect``/``exec_command`` differ.
"""

from __future__ import annotations

import importlib.util
import json
import os

import ansible.plugins.connection as _pkg

#: the option naming the address, per plugin (ssh: ``host``; paramiko: ``remote_addr``)
ADDRESS = {"ssh": "host", "paramiko_ssh": "remote_addr"}


def real_plugin(name: str):
    spec = importlib.util.spec_from_file_location(f"_nodegate_real_{name}",
                                                  os.path.join(os.path.dirname(_pkg.__file__), f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def recorder(real_cls, name: str):
    class Connection(real_cls):
        def _connect(self):
            self._connected = True
            return self

        def exec_command(self, cmd, in_data=None, sudoable=True):  # noqa: ARG002
            out = {"connection": name}
            if name in ADDRESS:
                opt = self.get_option
                out.update(address=opt(ADDRESS[name]) or self._play_context.remote_addr,
                           port=opt("port"), user=opt("remote_user"), key_file=opt("private_key_file"),
                           password_set=opt("password") is not None)
            return 0, json.dumps(out).encode(), b""

        def put_file(self, in_path, out_path):  # pragma: no cover - raw never copies
            raise NotImplementedError

        def fetch_file(self, in_path, out_path):  # pragma: no cover
            raise NotImplementedError

        def close(self):
            self._connected = False

    return Connection
