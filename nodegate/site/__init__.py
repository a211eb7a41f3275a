"""Operators' own checks: testinfra's ``host`` on every inventory node (docs/site-checks.md).

Layering: below pytest (the plugin glue is ``nodegate.site.items`` and plugins/nodegate_site.py):

- ``shell``: the site shell, ONE ``sh -s`` per node running every site command in turn;
- ``connection``: the node's one connection (nodegate.transport: host keys, connect deadline);
- ``recording``: commands recorded in the bundle and read back for ``--replay``;
- ``backend``: testinfra's backend API over a live connection or a recording;
- ``evidence``: the spec's ``site_evidence`` commands inside the probe's one exec;
- ``pool``: a run's site hosts, one per node, opened ahead and closed after the node's last test;
- ``checks``: a site test's id, severity and remediation (the ``nodegate_check`` marker);
- ``baseline``: site outcomes against ``--baseline``.

Imports stay lazy here: ``nodegate.spec`` validates ``site_evidence`` through ``evidence``.
"""
