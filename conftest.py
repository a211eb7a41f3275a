"""Root conftest: loads nodegate's pytest plugins (options, gathering, reports) for runs from the
checkout (``pytest suites --target ...``, the project's own ``tests/``).

``nodegate.plugins`` lists the seven plugin modules (plugins/__init__.py). They stay inactive
unless the run targets suites/ or names --inventory/--target/--replay, so the project's own
tests (tests/) run without touching any node.
"""

pytest_plugins = ["nodegate.plugins"]
