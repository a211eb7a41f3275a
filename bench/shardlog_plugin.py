"""pytest plugin used by bench/paired.py: one line per shard of a sharded nodegate run.

Loaded with ``-p shardlog_plugin`` (bench/ on PYTHONPATH), ``NODEGATE_BENCH_SHARDLOG=<file>`` and
``NODEGATE_BENCH_TAG=<run name>``. nodegate.session.shards collects every shard with
``Session.perform_collect()``, which calls ``pytest_collection_finish``: the time between two
calls is one shard (its items, then the next shard's collection). Each line, appended:
``<tag> <shard number> <time.time()> <user CPU s> <system CPU s>`` of the shard just done
(``resource.getrusage(RUSAGE_SELF)``: this process, all its threads).
"""

from __future__ import annotations

import os
import resource
import time

_LAST: list = []


def pytest_collection_finish(session):
    path = os.environ.get("NODEGATE_BENCH_SHARDLOG")
    if not path or hasattr(session.config, "workerinput"):
        return
    r = resource.getrusage(resource.RUSAGE_SELF)
    now = (time.time(), r.ru_utime, r.ru_stime)
    if _LAST:
        k, (_, u, s) = len(_LAST), _LAST[-1]
        with open(path, "a") as fh:
            fh.write(f"{os.environ.get('NODEGATE_BENCH_TAG', 'run')} {k} {now[0]:.3f} "
                     f"{now[1] - u:.4f} {now[2] - s:.4f}\n")
    _LAST.append(now)
