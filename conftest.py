"""Root conftest: loads nodegate's pytest plugins (options, gathering, reports).

The plugins stay inactive unless the run targets suites/ or names --inventory/--target/--replay,
so the project's own tests (tests/) run without touching any node.
"""

pytest_plugins = ["plugins.nodegate_plugin", "plugins.nodegate_reports", "plugins.nodegate_baseline",
                  "plugins.nodegate_burnin", "plugins.nodegate_site", "plugins.nodegate_perf"]
