"""The pytest side of a nodegate run: what plugins/nodegate_plugin.py wires into pytest's hooks.

Layering: this package imports pytest, ``nodegate.run`` (gathering), the run's inputs
(``nodegate.jobs``, ``nodegate.replay``, ``nodegate.cmdline``: pytest-free), ``nodegate.engine``
(evaluation) and ``nodegate.reports.records``; nothing below it imports it, and the phases' plugins
and nodegate.site use ``api`` (an import contract in pyproject.toml). The plugin module keeps the
options and the hook functions, each a few lines calling into here (docs/architecture.md):

- the run: ``state`` (stash keys), ``jobs`` (which pytest runs are nodegate runs, their paths,
  node jobs and spec, ``--list-hosts``), ``start`` (pytest_sessionstart: gather in the
  background, or load bundles), ``exitcodes`` (README's exit-code table, usage errors, signals,
  the session finish), ``terminal``, ``outputs`` (the reports as far as the disk allows), ``api``;
- the items: ``items`` (one per check and node from the specs alone, ordered node by node),
  ``granularity`` (one per GPU where the selection tells GPUs apart), ``markers``, ``verdicts``
  (the engine's result presented in setup), ``fastlane`` (the runtest protocol of a check item),
  ``currenttest`` (PYTEST_CURRENT_TEST per test function), ``phase`` (what the phase plugins share);
- which nodes: ``selection`` (nodes with a selected item; what ran), ``preselect`` (the selection
  learned in a forked child before gathering);
- scale: ``shards`` (a large run collected and run N nodes at a time), ``memory`` (a node released
  after its items; the GC schedule), ``scheduling`` (pytest-xdist by inventory node, ``-n`` capped
  to the workers that pay).

Imports go one way (no circle: import-linter): ``state`` <- ``exitcodes`` <- ``shards`` <-
``selection`` <- ``preselect`` <- ``start``; ``memory`` -> ``shards``. ``start`` gathers the
selected nodes (``start.gather_pending``, wired by the plugin after ``selection.after_collection``):
the selection never calls back into ``start``.
"""
