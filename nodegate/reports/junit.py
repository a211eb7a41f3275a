"""JUnit XML that CIs open at any fleet size, rendered from results.jsonl (docs/reports.md "JUnit").

Every file validates against ``junit-10.xsd`` of Jenkins' xunit plugin (a copy is kept in
tests/reports/data/) and stays under GitLab's limits by design: GitLab refuses a report whose XML
holds more than 250,000 objects (every element counts, text does not: its XmlAdapter's
``object_count``) and gitlab.com parses at most 500,000 test cases per report
(``max_test_cases_per_report``). Nodegate's budget per file is 80 % of each (``MAX_OBJECTS``,
``MAX_TESTCASES``; ``--junit-max-objects``).

Layout of one node (compact, ``node_fragment``)::

    <testsuite name=NODE hostname=NODE tests= failures= errors= skipped=>
      <properties> node, status, system_vendor, system_model, system_serial, driver_version,
                   spec_source[, not_evaluated: why] </properties>             (not on accepted nodes)
      <testcase classname="suites.test_driver" name="test_driver_stack[NODE]"/>          a passed node check
      <testcase classname="suites.test_pcie" name="test_pcie_link_trained[NODE-gpu0..7]"/> the passed GPUs of
                                                 a GPU check, counted on one testcase named by them ("0..2,4..7")
      <testsuite name="NODE gpu3 NG-PCIE-002" ...>                                     a FAIL or ERROR item
        <properties> node, check_id, severity, gpu_index, pci_bus_id, gpu_serial, gpu_uuid,
                     expected, observed, remediation, spec_source </properties>
        <testcase name="test_pcie_link_trained[NODE-gpu3]"><failure type="NG-PCIE-002" message=.../></testcase>
      </testsuite>
      <testcase name="test_x[NODE-gpu5]"><skipped message=.../></testcase>               a skipped item
      <testcase name="test_y[NODE-gpu0..7]"><skipped message=.../></testcase>            a GPU check skipped
                                                                                          on every GPU
    </testsuite>

Counts (``tests``, ``failures``, ``errors``, ``skipped``) say what the testcase elements hold, so
the tools that count ``<testcase>`` elements (Jenkins' JUnit plugin, GitLab) and those that read the
attributes agree: each ``<testsuite>`` counts the testcases it holds, those of the suites nested in
it included (junitparser's ``TestSuite.update_statistics`` counts so), one a testcase whatever the
records it stands for (the passed GPUs of a check are one testcase, ``-gpu0..7``: its name keeps
which GPUs; each GPU's record is in results.jsonl); ``failures``, ``errors``, ``skipped`` the
testcases with that child. The root ``<testsuites>`` of a file counts every testcase of the file
(``tests``, ``failures``, ``errors``: junit-10.xsd allows no ``skipped`` there). A healthy 8-GPU
node with 44 checks is ``tests="44"``, not the 199 records it had counted before.

junit-10.xsd has no ``<properties>`` inside ``<testcase>`` (pytest's own xunit2 output put them
there, which its own schema check warns about): a FAIL or ERROR item's properties go on a
``<testsuite>`` of its own around its testcase (GitLab and Jenkins read nested suites). An ERROR
carries the ERROR remediation (how to obtain the evidence: nodegate.reports.remedy), never the
check's FAIL text.

When the whole run fits one file's budget, ``<junitxml path>`` is that file. Otherwise nodes go,
whole and in run order, into ``<dir>/junit/part-NNN.xml`` (each within the budget) and
``<junitxml path>`` becomes the summary: one testcase per node (its status; a failure listing
what needs action, a skip when it was not evaluated) plus the list of parts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from .. import safeio
from ..engine.fold import gpu_ranges
from ..safeio import open_new
from .records import NodeInfo, Record, gpu_slot, spec_off_of
from .status import ACCEPTED, NEED_ACTION, NOT_EVALUATED

#: GitLab: 250,000 XML objects per file, 500,000 test cases per report (gitlab.com); 80 % of each.
GITLAB_MAX_OBJECTS, GITLAB_MAX_TESTCASES = 250_000, 500_000
MAX_OBJECTS, MAX_TESTCASES = 200_000, 400_000

#: per-item properties of a FAIL or ERROR testcase's suite (the order of docs/contributing.md)
ITEM_PROPS = ("node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid",
              "expected", "observed", "remediation", "spec_source")
NODE_PROPS = ("node", "status", "system_vendor", "system_model", "system_serial", "driver_version",
              "spec_source")
#: characters XML 1.0 does not allow (records are cleaned of C0/C1 controls already)
_XML_BAD = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
MESSAGE_CAP = 1000
#: a measured item's figure (--perf): added to ITEM_PROPS when the record has one
MEASURE_PROPS = ("value", "unit", "threshold", "rule")
_GPU_ID = re.compile(r"-gpu\d+\]$")
#: room kept in a part's ``<testsuites ...>`` tag for its counts, written when the part is closed
#: (`` tests="N" failures="N" errors="N"``, 10 digits each, then spaces: whitespace inside a tag)
_ROOT_COUNTS = 64


def _a(v) -> str:
    return quoteattr(_XML_BAD.sub("\ufffd", "" if v is None else str(v)))


def _t(v) -> str:
    return escape(_XML_BAD.sub("\ufffd", "" if v is None else str(v)))


def classname(nodeid: str) -> str:
    """``suites/test_pcie.py::test_x[n1]`` -> ``suites.test_pcie`` (pytest's own classname)."""
    path = nodeid.split("::", 1)[0]
    return path[:-3].replace("/", ".") if path.endswith(".py") else path.replace("/", ".")


def testname(nodeid: str) -> str:
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def gpu_group_name(nodeid: str, node: str, recs: list[Record]) -> str:
    """``test_x[n1-gpu3]`` -> ``test_x[n1-gpu0..7]``: the testcase counting a check's passed (or
    all skipped) GPUs names them; the healthy case is the same name run after run."""
    name = testname(nodeid)
    m = _GPU_ID.search(name)
    if m is None:   # not a per-GPU test id: the node name as the records give it
        return f"{name.split('[', 1)[0]}[{node}-gpu{gpu_ranges([gpu_slot(r) for r in recs])}]"
    # the item's own id up to "-gpu": pytest's escaping of the node name kept
    return f"{name[:m.start()]}-gpu{gpu_ranges([gpu_slot(r) for r in recs])}]"


@dataclass
class Fragment:
    """One node's XML and what it costs: elements (GitLab's objects) and testcases."""

    xml: str
    objects: int
    testcases: int
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0


@dataclass
class _Counter:
    """XML objects (GitLab's count) and the testcases written, by outcome (the suites' counts)."""

    objects: int = 0
    testcases: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0

    def el(self, n: int = 1) -> None:
        self.objects += n

    def case(self, kind: str = "") -> None:
        """One testcase; ``kind`` its failure, error or skipped child ("" when it passed)."""
        self.objects += 1
        self.testcases += 1
        if kind == "failure":
            self.failures += 1
        elif kind == "error":
            self.errors += 1
        elif kind == "skipped":
            self.skipped += 1


def _props(names, values: dict, c: _Counter) -> str:
    c.el(1 + len(names))
    return ("<properties>" + "".join(f"<property name={_a(n)} value={_a(values.get(n, ''))}/>" for n in names)
            + "</properties>")


def _item_case(rec: Record, c: _Counter) -> str:
    """A FAIL or ERROR testcase in its own suite with the item's properties."""
    kind = "failure" if rec.outcome == "fail" else "error"
    what = "" if kind == "failure" else "could not evaluate: "
    message = f"[{rec.check_id}] {what}{rec.message}" if rec.check_id else rec.message
    body = "\n".join(x for x in (
        message, f"severity: {rec.severity}" if rec.severity else "",
        f"expected: {rec.expected}" if rec.expected else "", f"observed: {rec.observed}" if rec.observed else "",
        f"action: {rec.action}" if rec.action else "",
        f"remediation: {rec.remediation}" if rec.remediation else "") if x)
    slot = gpu_slot(rec)   # a missing GPU's label: the testcase's own -gpu<N> (its gpu_index is empty)
    where = f"gpu{slot}" if slot != "" else "node"
    c.el(1)   # the testsuite
    props = _props(ITEM_PROPS + (MEASURE_PROPS if rec.value or rec.rule else ()), rec.__dict__, c)
    c.case(kind)
    c.el(1)   # failure / error
    return (f"<testsuite name={_a(f'{rec.node} {where} {rec.check_id or testname(rec.nodeid)}')} tests=\"1\" "
            f"failures=\"{int(kind == 'failure')}\" errors=\"{int(kind == 'error')}\" skipped=\"0\">{props}"
            f"<testcase classname={_a(classname(rec.nodeid))} name={_a(testname(rec.nodeid))}>"
            f"<{kind} type={_a(rec.check_id or kind)} message={_a(message[:MESSAGE_CAP])}>{_t(body)}</{kind}>"
            f"</testcase></testsuite>")


def _plain_case(rec: Record, c: _Counter) -> str:
    c.case("skipped" if rec.outcome == "skip" else "")
    head = f"<testcase classname={_a(classname(rec.nodeid))} name={_a(testname(rec.nodeid))}"
    if rec.outcome == "skip":
        c.el(1)
        msg = f"[{rec.check_id}] {rec.message}" if rec.check_id else rec.message
        return f"{head}><skipped message={_a(msg[:MESSAGE_CAP])}/></testcase>"
    return head + "/>"


def _gpu_pass_case(node: str, recs: list[Record], c: _Counter) -> str:
    c.case()
    return f"<testcase classname={_a(classname(recs[0].nodeid))} name={_a(gpu_group_name(recs[0].nodeid, node, recs))}/>"


def _gpu_skip_case(node: str, recs: list[Record], c: _Counter) -> str:
    """Every GPU of the check skipped (the spec: e.g. ``memory.repair=auto``); the first GPU's
    message stands for all (each GPU's own is in results.jsonl)."""
    c.case("skipped")
    c.el(1)
    r = recs[0]
    msg = f"[{r.check_id}] {r.message}"
    return (f"<testcase classname={_a(classname(r.nodeid))} name={_a(gpu_group_name(r.nodeid, node, recs))}>"
            f"<skipped message={_a(msg[:MESSAGE_CAP])}/></testcase>")


def node_fragment(info: NodeInfo, recs: list[Record]) -> Fragment:
    """The ``<testsuite>`` of one node (layout in the module docstring)."""
    c = _Counter()
    parts: list[str] = []
    by_gpu_check: dict[str, list[Record]] = {}
    order: list[tuple[str, object]] = []
    for r in recs:
        if r.scope == "gpu" and r.check_id:
            if r.check_id not in by_gpu_check:
                by_gpu_check[r.check_id] = []
                order.append(("gpu", r.check_id))
            by_gpu_check[r.check_id].append(r)
        else:
            order.append(("one", r))
    for kind, x in order:
        if kind == "one":
            parts.append(_item_case(x, c) if x.outcome in ("fail", "error") else _plain_case(x, c))
            continue
        group = by_gpu_check[x]
        # every GPU skipped (by the spec): one testcase; each GPU's own message is in results.jsonl
        if len(group) > 1 and all(r.outcome == "skip" for r in group):
            parts.append(_gpu_skip_case(info.node, group, c))
            continue
        passed = [r for r in group if r.outcome == "pass"]
        if passed:
            parts.append(_gpu_pass_case(info.node, passed, c))
        for r in group:
            if r.outcome != "pass":
                parts.append(_item_case(r, c) if r.outcome in ("fail", "error") else _plain_case(r, c))
    c.el(1)
    # an accepted node's suite needs no properties (no failures, no errors, every item there): 9
    # elements a node, ~37,000 at 4,096 nodes, of GitLab's 250,000
    # a node not evaluated says why (deselected, not run: nodegate.session.selection)
    names = NODE_PROPS + (("not_evaluated",) if info.status == NOT_EVALUATED else ())
    # issue 37.5: the spec keys that turned this node's checks off, with the file that set each
    # (the SKIP messages' "[spec <key> set in <file>]", nodegate.engine.evaluate.spec_off_note)
    spec_off = info.spec_off or spec_off_of(recs)
    if spec_off:
        names += ("spec_set_in",)
    props = "" if info.status == ACCEPTED and not spec_off else _props(names, {
        "node": info.node, "status": info.status, "system_vendor": info.system_vendor,
        "system_model": info.system_model, "system_serial": info.system_serial,
        "driver_version": info.driver_version, "spec_source": info.spec_source,
        "not_evaluated": info.not_evaluated, "spec_set_in": spec_off}, c)
    # the counts of the testcases written (module docstring "Counts"), not of the records
    xml = (f"<testsuite name={_a(info.node or '(no node)')} hostname={_a(info.node)} tests=\"{c.testcases}\" "
           f"failures=\"{c.failures}\" errors=\"{c.errors}\" skipped=\"{c.skipped}\">{props}{''.join(parts)}"
           "</testsuite>\n")
    return Fragment(xml, c.objects, c.testcases, c.testcases, c.failures, c.errors, c.skipped)


def _append(fh, text: str) -> None:
    """One write to an unbuffered binary file; on a full disk it is cut back to where it was."""
    data = text.encode("utf-8")
    pos = fh.tell()
    try:
        if fh.write(data) != len(data):
            raise OSError(28, "No space left on device")
    except OSError:
        try:
            fh.truncate(pos)
            fh.seek(pos)
        except (OSError, ValueError):
            pass
        raise


@dataclass
class _Part:
    path: Path
    fh: object
    objects: int = 1          # <testsuites>
    testcases: int = 0
    tests: int = 0
    failures: int = 0
    errors: int = 0
    nodes: list[str] = field(default_factory=list)
    counts_at: int = 0        # byte offset of the room for the root's counts (_ROOT_COUNTS)


class JUnitWriter:
    """Streams node fragments into parts of at most ``max_objects`` elements / ``max_testcases``
    testcases; ``finish()`` writes ``path`` (one file, or the summary plus parts)."""

    def __init__(self, path: Path, max_objects: int = MAX_OBJECTS, max_testcases: int = MAX_TESTCASES,
                 suite_name: str = "nodegate"):
        self.path = Path(path)
        self.max_objects, self.max_testcases = max_objects, max_testcases
        self.suite_name = suite_name
        self._tmp = Path(tempfile.mkdtemp(prefix=".junit-", dir=self.path.parent if self.path.parent.exists()
                                          else None))
        self.parts: list[_Part] = []
        self.summary: list[tuple[NodeInfo, list[str]]] = []   # (node, its failed/errored check ids)

    def _part(self, f: Fragment) -> _Part:
        cur = self.parts[-1] if self.parts else None
        if cur is None or (cur.nodes and (cur.objects + f.objects > self.max_objects
                                          or cur.testcases + f.testcases > self.max_testcases)):
            p = self._tmp / f"part-{len(self.parts) + 1:03d}.xml"
            # unbuffered: one write a node, cut back exactly on a full disk (nothing left to flush)
            fh = open_new(p, "wb", buffering=0)  # closed in finish()/abort(); a planted link is not followed
            # the file is written once, in place, and renamed when complete (no second copy): the
            # root's counts, known at the end, go into room kept in its tag (_close)
            head = f'<?xml version="1.0" encoding="utf-8"?>\n<testsuites name={_a(self.suite_name)}'
            cur = _Part(p, fh, counts_at=len(head.encode("utf-8")))
            _append(fh, head + " " * _ROOT_COUNTS + ">\n")
            self.parts.append(cur)
        return cur

    def add_node(self, info: NodeInfo, recs: list[Record]) -> None:
        """Append one node's suite (flushed: a full disk raises here, for this node, and the part
        is cut back to its last whole node so the caller may free room and call again)."""
        f = node_fragment(info, recs)
        p = self._part(f)
        _append(p.fh, f.xml)
        p.objects += f.objects
        p.testcases += f.testcases
        p.tests, p.failures, p.errors = p.tests + f.tests, p.failures + f.failures, p.errors + f.errors
        p.nodes.append(info.node)
        bad = sorted({r.check_id or testname(r.nodeid) for r in recs if r.outcome in ("fail", "error")})
        self.summary.append((info, bad))

    @staticmethod
    def _close(part: _Part) -> None:
        """End the part's file: its root counts (every testcase of the file) into the room kept
        for them, then ``</testsuites>``."""
        if part.fh.closed:
            return
        counts = f' tests="{part.tests}" failures="{part.failures}" errors="{part.errors}"'
        pos = part.fh.tell()
        part.fh.seek(part.counts_at)
        part.fh.write(counts.ljust(_ROOT_COUNTS)[:_ROOT_COUNTS].encode("ascii"))
        part.fh.seek(pos)
        _append(part.fh, "</testsuites>\n")
        part.fh.close()

    def _close_into(self, part: _Part, dst: Path) -> None:
        self._close(part)
        os.replace(part.path, dst)

    def finish(self) -> list[tuple[str, str, int, int]]:
        """Write the files; returns (what, path, XML objects, testcases) of each. A full disk
        raises with the parts kept (the caller may free room and call again, or ``abort``)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.parts:
            self._part(Fragment("", 0, 0))
        if len(self.parts) == 1:
            self._close_into(self.parts[0], self.path)
            shutil.rmtree(self._tmp, ignore_errors=True)
            p = self.parts[0]
            return [("JUnit XML", str(self.path), p.objects, p.testcases)]
        out = []
        d = self.path.parent / "junit"
        # reports/junit below the JUnit file's directory, never through a link planted there
        # (nodegate.safeio; LinkRefused is an OSError: the caller reports it)
        dfd = safeio.open_dir(d, anchor=self.path.parent)
        try:
            mine = {p.path.name for p in self.parts if p.path.parent == d}
            with os.scandir(dfd) as it:   # an earlier run's parts: regular files of ours only
                stale = [e.name for e in it if re.fullmatch(r"part-\d{3,}\.xml", e.name)
                         and e.is_file(follow_symlinks=False) and e.name not in mine]
            for name in stale:
                os.unlink(name, dir_fd=dfd)
            for i, p in enumerate(self.parts, 1):
                dst = d / f"part-{i:03d}.xml"
                if p.path != dst:
                    self._close(p)
                    os.replace(p.path, dst.name, dst_dir_fd=dfd)
                    p.path = dst
                out.append((f"JUnit part {i}", str(dst), p.objects, p.testcases))
        finally:
            os.close(dfd)
        objects, cases = self._write_summary(d)
        shutil.rmtree(self._tmp, ignore_errors=True)
        return [("JUnit XML (summary)", str(self.path), objects, cases)] + out

    def abort(self) -> None:
        """Remove what was written so far (a full disk): no truncated file is left."""
        for p in self.parts:
            try:
                p.fh.close()
            except OSError:
                pass
            if p.path.parent != self._tmp:
                safeio.unlink(p.path, anchor=self.path.parent)
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _write_summary(self, parts_dir: Path) -> tuple[int, int]:
        """One testcase per node: passed (accepted), failure (need action) or skipped (not
        evaluated), in a single suite; the parts listed as its properties."""
        cases, objects = [], 3 + len(self.parts)   # testsuites, testsuite, properties, a property per part
        failures = skipped = 0
        for info, bad in self.summary:
            objects += 1
            head = f"<testcase classname=\"nodegate.nodes\" name={_a(info.node or '(no node)')}"
            if info.status == NEED_ACTION:
                failures += 1
                objects += 1
                msg = f"{info.node}: need action: {', '.join(bad)}"
                cases.append(f"{head}><failure type=\"need action\" message={_a(msg[:MESSAGE_CAP])}>"
                             f"{_t(msg)}</failure></testcase>")
            elif info.status == NOT_EVALUATED:
                skipped += 1
                objects += 1
                why = info.not_evaluated or "not evaluated"
                cases.append(f"{head}><skipped message={_a((info.node + ': ' + why)[:MESSAGE_CAP])}/></testcase>")
            else:
                cases.append(head + "/>")
        props = "".join(f"<property name=\"part\" value={_a((parts_dir / f'part-{i:03d}.xml').name)}/>"
                        for i in range(1, len(self.parts) + 1))
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            self._summary_to(tmp, cases, props, failures, skipped)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, self.path)
        return objects, len(cases)

    def _summary_to(self, tmp: Path, cases: list[str], props: str, failures: int, skipped: int) -> None:
        with open_new(tmp, "w", encoding="utf-8") as out:
            out.write('<?xml version="1.0" encoding="utf-8"?>\n')
            out.write(f"<testsuites name={_a(self.suite_name + ' summary')} tests=\"{len(cases)}\" "
                      f"failures=\"{failures}\" errors=\"0\">\n")
            out.write(f"<testsuite name=\"nodegate nodes\" tests=\"{len(cases)}\" failures=\"{failures}\" "
                      f"errors=\"0\" skipped=\"{skipped}\"><properties>{props}</properties>\n")
            for c in cases:
                out.write(c + "\n")
            out.write("</testsuite>\n</testsuites>\n")
