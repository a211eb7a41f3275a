"""nodegate's suites: the checks as pytest tests (assertions only), installed with the package so
the ``nodegate`` command runs them from any directory (nodegate/cli.py)."""
