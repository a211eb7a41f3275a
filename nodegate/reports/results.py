"""``<reports>/results.jsonl``: one JSON line per test item, written as the run goes.

The machine-readable record of a run (docs/reports.md "results.jsonl"), for jq, dashboards and
the other reports: the JUnit files, the HTML report and its node pages, the RMA and action
lists and the evidence archives are all rendered from these lines at the end of the session
(``render.render_all``), so every report agrees with this file.

One line per item, written when the item's last phase (teardown) is reported; items run node by
node, so a node's lines are consecutive (``ResultsWriter.interleaved`` says when they are not,
e.g. with pytest-xdist). Keys, in this order (``LINE_FIELDS``): the ten the issue names first,
then the rest of the record (strings; ``gpu_index`` an integer or null; ``xids`` a list of
integers). ``ensure_ascii`` keeps the file 7-bit; every value was cleaned of control characters
(``text.clean``) and capped before it got here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from ..safeio import open_new

from .records import Record

FILENAME = "results.jsonl"

#: Keys of every line, in this order.
LINE_FIELDS = ("node", "check_id", "scope", "gpu_index", "pci_bus_id", "gpu_serial", "outcome", "message",
               "observed", "expected", "severity", "action",
               "check_name", "title", "gpu_uuid", "board_part_number", "vbios_version", "driver_version",
               "remediation", "xids", "spec_source", "nodeid", "evidence", "bundle_dir",
               "value", "unit", "threshold", "rule", "floor", "gpus_expected")


def to_line(rec: Record) -> dict:
    """The JSON object of one record (``LINE_FIELDS`` order)."""
    d = {f: getattr(rec, f) for f in LINE_FIELDS}
    d["gpu_index"] = int(rec.gpu_index) if rec.gpu_index.isdigit() else None
    d["xids"] = [int(x) for x in rec.xids.split(",") if x.strip().isdigit()] if rec.xids else []
    return d


#: the plain string fields of a line (``from_line`` converts gpu_index and xids, and nodeid first)
_TEXT_FIELDS = tuple(f for f in LINE_FIELDS if f not in ("nodeid", "gpu_index", "xids"))


def from_line(d: dict) -> Record:
    """A Record from one parsed line (unknown keys ignored, missing keys empty): every field a
    str (None -> "", anything else ``str()``), ``gpu_index`` "" or its digits, ``xids``
    ","-joined. Built with one constructor call, not a setattr a field: the reports at the end read
    every line back (50,944 at 256 nodes); the setattr loop was 0.83 s of a 30 s profiled
    64-node replay (docs/performance.md "Issue 40.5")."""
    get = d.get
    kw = {}
    for f in _TEXT_FIELDS:
        v = get(f)
        kw[f] = v if isinstance(v, str) else ("" if v is None else str(v))
    v = get("gpu_index")
    kw["gpu_index"] = "" if v is None else str(v)
    v = get("xids")
    kw["xids"] = ",".join(str(x) for x in v) if isinstance(v, list) else ""
    return Record(nodeid=str(get("nodeid") or ""), has_nodegate=bool(kw["check_id"]), **kw)


#: the encoder of every line: what ``json.dumps(d, ensure_ascii=True, separators=(",", ":"))``
#: writes (tests/reports compare the files), built once: json.dumps builds a new JSONEncoder for
#: every call with non-default arguments, once per record (50,944 at 256 nodes). A line's values
#: are str, int, None and a list of int (``to_line``): no cycle to check for.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), check_circular=False)


class ResultsWriter:
    """Appends one line per finished item to ``path`` (truncated when the session starts).

    Lines are buffered by the file object and flushed whenever the node changes, so a crash
    loses at most the node being judged. ``count`` lines written so far; ``interleaved`` True
    once a node's lines were not consecutive (readers then group in memory)."""

    def __init__(self, path: Path):
        #: where the lines go while the run goes on (``.results.jsonl.partial`` beside the final
        #: file), renamed to ``final`` by ``close``: a run that ends in exit 2 after some items ran
        #: (a later shard's collection error, issue 40.8) leaves the previous results.jsonl as it
        #: was (``discard``), like every other report; a crash leaves its lines in the partial file
        self.final = Path(path)
        self.path = self.final.with_name(f".{self.final.name}.partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # a link planted at reports/results.jsonl (or its partial file) is not followed (nodegate.safeio)
        self._fh = open_new(self.path, "w", encoding="ascii", buffering=1 << 16)
        self.count = 0
        self.lost = 0
        self.error: OSError | None = None   # a full disk: the lines from then on are lost (and counted)
        self.interleaved = False
        self._last = None
        self._seen: set[str] = set()
        #: the nodes in the order their first line was written
        self.order: list[str] = []

    def in_order(self, nodes) -> bool:
        """The nodes' lines came in the order of ``nodes`` (the run's): not so on an xdist run,
        whose workers finish nodes in their own time (the readers then follow ``nodes``)."""
        rank = {n: i for i, n in enumerate(nodes)}
        got = [rank[n] for n in self.order if n in rank]
        return all(a < b for a, b in zip(got, got[1:]))

    def write(self, rec: Record) -> None:
        """One line. An OSError (disk full) never stops the run: writing stops, the file keeps
        its whole lines, ``error`` says why and ``lost`` counts the lines not written."""
        if self.error is not None:
            self.lost += 1
            return
        try:
            if rec.node != self._last:
                if rec.node in self._seen:
                    self.interleaved = True
                else:
                    self.order.append(rec.node)
                self._seen.add(rec.node)
                self._last = rec.node
                self._fh.flush()
            self._fh.write(_ENCODER.encode(to_line(rec)) + "\n")
            self.count += 1
        except OSError as e:
            self.error = e
            self.lost += 1
            self._cut_to_whole_lines()

    def _cut_to_whole_lines(self) -> None:
        try:
            self._fh.close()
        except OSError:
            pass
        try:   # a line half written is no line (readers skip it anyway): cut it off
            with open(self.path, "rb+") as fh:
                data = fh.read()
                fh.truncate(data.rfind(b"\n") + 1)
        except OSError:
            pass

    def discard(self) -> None:
        """The run writes no report (exit 2): its lines go, the previous results.jsonl stays."""
        try:
            self._fh.close()
        except OSError:
            pass
        if self.path != self.final:
            try:
                self.path.unlink()
            except OSError:
                pass

    def close(self) -> None:
        """Flush, then the partial file becomes results.jsonl (``final``; ``path`` follows)."""
        self._close_file()
        if self.path != self.final:
            try:
                os.replace(self.path, self.final)   # replaces a link planted there, never follows it
                self.path = self.final
            except OSError as e:
                if self.error is None:
                    self.error = e

    def _close_file(self) -> None:
        if not self._fh.closed:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except OSError as e:
                if self.error is None:
                    self.error = e
                    self._cut_to_whole_lines()
                    return
            self._fh.close()


def read(path: Path) -> Iterator[Record]:
    """Every record of a results file, in file order. A line that is not a JSON object (a
    truncated last line after a crash) is skipped."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                yield from_line(d)


def _line_node(line: bytes) -> str | None:
    """The node of one results line (``to_line`` writes "node" first), None when unreadable."""
    try:
        if line.startswith(b'{"node":'):
            return _DECODER.raw_decode(line[8:].decode("utf-8", errors="replace"))[0]
        d = json.loads(line)
        return d.get("node") if isinstance(d, dict) else None
    except (ValueError, RecursionError):
        return None


_DECODER = json.JSONDecoder()


def _indexed_groups(path: Path, order=()) -> Iterator[tuple[str, list[Record]]]:
    from array import array
    index: dict[str, array] = {}
    with open(path, "rb") as fh:
        pos = 0
        for line in fh:
            node = _line_node(line)
            if isinstance(node, str):
                index.setdefault(node, array("q")).append(pos)
            pos += len(line)
        # the run's node order first (xdist: the file holds nodes in the order workers finished
        # them; the reports must not depend on it), then any other node as it first appeared
        rank = {n: i for i, n in enumerate(order)}
        first = {n: i for i, n in enumerate(index)}
        for node in sorted(index, key=lambda n: (rank.get(n, len(rank)), first[n])):
            offsets = index[node]
            recs = []
            for off in offsets:
                fh.seek(off)
                try:
                    d = json.loads(fh.readline())
                except (ValueError, RecursionError):
                    continue
                if isinstance(d, dict):
                    recs.append(from_line(d))
            yield node, recs


def node_groups(path: Path, interleaved: bool = False, order=()) -> Iterator[tuple[str, list[Record]]]:
    """(node, its records) in file order: one group per run of consecutive lines of a node,
    holding one node in memory at a time. ``interleaved`` (lines of nodes mixed: the run-wide
    node-identity items of each shard come after its nodes' own): one node at a time too, in
    first-appearance order, from an index of each node's line offsets (8 bytes a line: reading
    every record first took 2.2 GB at 4,096 nodes, docs/performance.md), in the run's node order
    (``order``) where given, so an xdist run's reports do not follow its workers' timing."""
    if interleaved:
        yield from _indexed_groups(path, order)
        return
    cur: str | None = None
    recs: list[Record] = []
    for rec in read(path):
        if rec.node != cur and recs:
            yield cur, recs
            recs = []
        cur = rec.node
        recs.append(rec)
    if recs:
        yield cur, recs
