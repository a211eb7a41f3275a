"""Files an earlier run left in a reports directory: removed, and said so (issue 30).

Every file in a reports directory belongs to the run that wrote the reports: an evidence
archive ``bundles/<node>.tar.gz`` of a node that has no finding now (or is no longer in the
run), a node page ``nodes/<node>.html`` of a node this run did not have, ``junit/part-NNN.xml``
of an earlier run that was split when this one is not (or into fewer parts) would otherwise
be read as this run's. Only what nodegate itself writes is removed, by name pattern: regular
files (``*.tar.gz`` directly in ``bundles/``, ``*.html`` directly in ``nodes/``,
``part-NNN.xml`` directly in ``junit/``), never through a symbolic link (a linked folder is
left alone, a linked file is not followed), never a directory: a live run's raw evidence
``bundles/<node>/`` and the bundles a ``--replay`` reads stay as they are. Called at the end of
rendering (nodegate.reports.render), so a run that stops with exit 2 touches nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_PATTERNS = {"bundles": re.compile(r"^[^/]+\.tar\.gz$"), "nodes": re.compile(r"^[^/]+\.html$"),
             "junit": re.compile(r"^part-\d{3,}\.xml$")}


def remove_stale(folders: list[tuple[str, Path]], written: set[Path]) -> list[Path]:
    """Remove, in each (kind, folder) (kind: ``bundles``, ``nodes``, ``junit``), the files of
    that kind's pattern that are not in ``written`` (this run's files); returns what was removed.
    A folder that is a symbolic link, or is absent, is skipped."""
    keep = {os.path.normcase(os.path.abspath(p)) for p in written}
    removed: list[Path] = []
    for kind, folder in folders:
        pat = _PATTERNS[kind]
        if os.path.islink(folder) or not os.path.isdir(folder):
            continue
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if not pat.match(e.name) or not e.is_file(follow_symlinks=False):
                continue
            if os.path.normcase(os.path.abspath(e.path)) in keep:
                continue
            try:
                os.unlink(e.path)
                removed.append(Path(e.path))
            except OSError:
                pass
    return removed
