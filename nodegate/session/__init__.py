"""The pytest side of a nodegate run: what plugins/nodegate_plugin.py wires into pytest's hooks.

Layering: this package imports pytest, ``nodegate.run`` (gathering), ``nodegate.checks``
(evaluation) and ``nodegate.reports.records``; nothing below it imports it. The plugin module
keeps the options and the hook functions, each a few lines calling into here:

- ``state``: stash keys and the session's config (shared by the modules below);
- ``jobs``: the run's NodeJobs and their spec (``nodegate.jobs``, ``nodegate.specsource``: pytest-free)
  and which pytest runs are nodegate runs;
- ``start``: pytest_sessionstart's work: gather in the background, or load bundles
  (``nodegate.replay``: ``--replay``, xdist workers);
- ``items``: per-node / per-GPU parametrization from the specs alone (no gathered fact),
  ``VerdictParam``, collection order;
- ``verdicts``: evaluating an item's check in setup and recording what the reports need;
- ``scheduling``: pytest-xdist's ``--dist loadgroup`` by inventory node, ``-n`` capped to the
  workers that pay (serial when none does);
- ``shardplan``: whether and how a large run is cut into shards (imports ``state`` only);
- ``selection``: which nodes have a selected item, what ran (records it; the verdict itself is
  nodegate.reports.status's); ``preselect``: the selection learned in a forked child before
  gathering, for the runs that gather before collecting (the phases' items and xdist's workers
  follow gathered evidence); ``shards``: the loop that collects and runs shard after shard;
- ``exitcodes``: README's exit-code table and whether a run may write reports at all;
- ``gcsched``: the cyclic-GC schedule of a run;
- ``terminal``: one progress line per node, the "gathered N/M" lines.

Imports go one way (issue 30: no circle among start, selection, shards, gcsched):
``state`` <- ``shardplan`` <- ``selection`` <- ``preselect`` <- ``start``; ``jobs`` <-
``start``; ``shards`` ->
``selection``, ``shardplan``; ``gcsched`` -> ``shardplan``. ``start`` gathers the selected nodes
(``start.gather_pending``, wired by the plugin after ``selection.after_collection``): the
selection never calls back into ``start``.
"""
