"""nodegate's pytest plugins, installed as ``nodegate.plugins`` (setup.py maps this directory).

Nothing registers them by installation (no pytest11 entry points): they load where nodegate is
asked for. ``pytest -p nodegate.plugins`` loads all seven (pytest imports every name in the
``pytest_plugins`` of a plugin module it registers); ``-p nodegate.plugins.nodegate_reports``
one of them. The ``nodegate`` command (nodegate/cli.py) and the checkout's conftest.py load
this package. The suite plugin comes first: the others read the run it builds.
"""

pytest_plugins = ["nodegate.plugins.nodegate_plugin", "nodegate.plugins.nodegate_reports",
                  "nodegate.plugins.nodegate_baseline", "nodegate.plugins.nodegate_burnin",
                  "nodegate.plugins.nodegate_site", "nodegate.plugins.nodegate_perf",
                  "nodegate.plugins.nodegate_crossnode"]
