"""Files an earlier run left in a reports directory: removed, and said so (issue 30).

Every file in a reports directory belongs to the run that wrote the reports: an evidence
archive ``bundles/<node>.tar.gz`` of a node that has no finding now (or is no longer in the
run), a node page ``nodes/<node>.html`` of a node this run did not have, ``junit/part-NNN.xml``
of an earlier run that was split when this one is not (or into more parts) would otherwise be
read as this run's. Only what nodegate itself writes is removed, by name pattern: regular files
(``*.tar.gz`` directly in ``bundles/``, ``*.html`` directly in ``nodes/``, ``part-NNN.xml``
directly in ``junit/``), in a folder opened without following a link (``safeio.open_dir``: a
linked folder is left alone, a linked file is not followed), never a directory: a live run's raw
evidence ``bundles/<node>/`` and the bundles a ``--replay`` reads stay as they are. Called at
the end of rendering (nodegate.reports.render), so a run that stops with exit 2 touches nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import safeio

_PATTERNS = {"bundles": re.compile(r"^[^/]+\.tar\.gz$"), "nodes": re.compile(r"^[^/]+\.html$"),
             "junit": re.compile(r"^part-\d{3,}\.xml$")}


def remove_stale(folders: list[tuple[str, Path, Path]], written: set[Path]) -> list[Path]:
    """Remove, in each (kind, folder, anchor) (kind: ``bundles``, ``nodes``, ``junit``; anchor:
    the operator's directory the folder lies in), the files of that kind's pattern that are not
    in ``written`` (this run's files); returns what was removed. A folder that is absent, or a
    symbolic link on the way from its anchor, is skipped."""
    removed: list[Path] = []
    for kind, folder, anchor in folders:
        pat = _PATTERNS[kind]
        keep = {Path(p).name for p in written if os.path.abspath(Path(p).parent) == os.path.abspath(folder)}
        try:
            dfd = safeio.open_dir(folder, anchor=anchor, create=False)
        except (OSError, ValueError):
            continue
        try:
            with os.scandir(dfd) as it:
                old = [e.name for e in it if pat.match(e.name) and e.name not in keep
                       and e.is_file(follow_symlinks=False)]
            for name in sorted(old):
                try:
                    os.unlink(name, dir_fd=dfd)
                    removed.append(Path(folder) / name)
                except OSError:
                    pass
        finally:
            os.close(dfd)
    return removed
