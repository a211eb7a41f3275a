"""One item per GPU check and node, or one per GPU: what the run's selection needs (issue 40.5).

A GPU check's item is ``test_x[<node>]`` by default: it evaluates every GPU of the node through
the engine (``nodegate.engine.fold``) and carries one record per GPU, so results.jsonl, JUnit,
HTML and RMA are what one item per GPU gave. pytest's per-item machinery was most of a replay's
cost with ~200 items a node (docs/performance.md "Issue 40.5").

Where the run's selection can tell a check's GPUs apart, that (check, node) keeps one item per
GPU, ``test_x[<node>-gpu<i>]``, as before, so every GPU-level selection selects what it did:

- ``--per-gpu-items``: every GPU check on every node;
- ``-k``: an identifier of the expression found in a per-GPU item's name and not in the folded
  item's (pytest's ``-k`` matches case-insensitive substrings of the names: ``-k gpu3``,
  ``-k "n1-gpu3"``, ``-k "not gpu"``). Per-GPU items also carry the folded name as a keyword
  (``markers.mark_item``), so an identifier found in the folded name only (``-k "test_x[n1]"``,
  ``-k "n1]"``) matches both forms alike and needs no per-GPU item;
- ``--deselect``: an id prefix that a per-GPU id starts with and the folded id does not. A prefix
  of the folded id (``...::test_x[n1]``, the id --collect-only prints, or the module) deselects
  the whole (check, node): it stays one item, deselected, whatever else the selection names;
- a test path naming a per-GPU id (``suites/test_x.py::test_x[n1-gpu3]``); one naming the folded
  id keeps the folded item (pytest collects that name);
- ``--lf``/``--ff``, ``--sw``: pytest's cache names a per-GPU id of the check and node (the run
  that failed had per-GPU items).

Everything else pytest selects on (markers, the check id keyword, the module) is the same for
both forms, so these are the only ways a selection can see the difference: the rule is exact,
not a guess. A selection naming an id --collect-only printed (the folded ones, by default)
selects what pytest selects with one item per check and node. Decided per (check, node) at collection from the options alone, so the controller,
xdist workers and shards decide alike.
"""

from __future__ import annotations

import re

import pytest

_KEY = pytest.StashKey[object]()
#: pytest's ``-k`` identifiers (``_pytest.mark.expression``: ``ident``), its keywords left out
_IDENT = re.compile(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+")
_RESERVED = {"and", "or", "not", "true", "false", "none"}
_DIGITS = re.compile(r"[0-9]+")


class Granularity:
    """What the options ask of the items' ids (``per_gpu``: one (check, node) at a time)."""

    def __init__(self, config):
        o = config.option
        self.every = bool(getattr(o, "per_gpu_items", False))
        kw = getattr(o, "keyword", "") or ""
        self.idents = [i.lower() for i in _IDENT.findall(kw) if i.lower() not in _RESERVED]
        self.deselect = tuple(str(d) for d in (getattr(o, "deselect", None) or ()))
        # test paths naming an item: the name after the last "::" (pytest matches it exactly)
        self.names = {a.rsplit("::", 1)[1] for a in (str(x) for x in (config.args or ())) if "::" in a and "[" in a}
        self.cached = set(_cached_ids(config))
        self.narrowed = bool(self.idents or self.deselect or self.names or self.cached)
        # every GPU label the selection could tell apart from the folded id: gpu<digits> for each
        # run of digits it names (an id's GPU part is gpu<decimal>), and gpu0 for the rest
        runs = {m for t in (*self.idents, *self.deselect, *self.names, *self.cached) for m in _DIGITS.findall(t)}
        self._candidates = ["gpu0", *(f"gpu{r}" for r in sorted(runs))]
        #: nodes with per-GPU items from gpu.count (a GPU beyond it has none: engine.surplus_gpus)
        self.from_count: set[str] = set()

    def may_split(self, base: str, node: str) -> bool:
        """Whether ``per_gpu`` can be True for (``base``, ``node``) whatever GPUs the node has,
        decided without them (items are collected from the specs alone): exact, since a
        selection tells a per-GPU id from the folded one only through the GPU digits it names."""
        return self.every or (self.narrowed and self.per_gpu(base, node, self._candidates))

    def per_gpu(self, base: str, node: str, labels) -> bool:
        """True when the items of ``base`` (``suites/test_x.py::test_x``) on ``node`` must be one
        per GPU (``labels``: ``gpu0``...) for the run's selection to select what it did."""
        if self.every:
            return True
        if not self.narrowed:
            return False
        func = base.rsplit("::", 1)[-1]
        folded_name = f"{func}[{node}]"
        folded_id = f"{base}[{node}]"
        # a selection naming the folded item (as --collect-only prints it) selects it as pytest
        # does: a deselect prefix of its id deselects the whole (check, node) (per-GPU ids would
        # not start with ``...[node]`` and every GPU would run), a test path naming it collects
        # that name (per-GPU items would not be found)
        if folded_name in self.names or any(folded_id.startswith(d) for d in self.deselect):
            return False
        low = folded_name.lower()
        for label in labels:
            name = f"{func}[{node}-{label}]"
            if name in self.names:
                return True
            nid = f"{base}[{node}-{label}]"
            if nid in self.cached:
                return True
            if any(nid.startswith(d) for d in self.deselect):
                return True
            # an identifier found in the per-GPU name only: it names GPUs. One found in the folded
            # name only needs no per-GPU item: those carry the folded name as a keyword
            # (markers.mark_item), so -k matches it on either form
            g = name.lower()
            if any(i in g and i not in low for i in self.idents):
                return True
        return False


    def may_split_node(self, node: str) -> bool:
        """Whether any check's items on ``node`` may be per GPU, decided from the node's name
        alone (an over-approximation of ``may_split`` for every test function: the part of a
        -k identifier or an id after its last ``[`` compared with ``<node>-gpu<i>]`` and
        ``<node>]``). A live run gathers first when this holds for a node without gpu.count
        (nodegate.session.start): its per-GPU items follow what it reports."""
        if self.every:
            return True
        if not self.narrowed:
            return False
        folded = f"{node}]".lower()
        for label in self._candidates:
            g = f"{node}-{label}]".lower()
            for i in self.idents:
                t = i.rsplit("[", 1)[-1]
                if (t in g) != (t in folded):
                    return True
            for d in (*self.deselect, *self.names, *self.cached):
                if "[" in d:
                    t = d.rsplit("[", 1)[-1].lower()
                    if g.startswith(t) != folded.startswith(t):
                        return True
        return False


def of(config) -> Granularity:
    """The run's Granularity (made once per session)."""
    g = config.stash.get(_KEY, None)
    if g is None:
        g = config.stash[_KEY] = Granularity(config)
    return g


def _cached_ids(config):
    """The test ids pytest's cache selects on this run: the last failures (``--lf``, ``--ff``)
    and stepwise's last failed test (``--sw``)."""
    o = config.option
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    if getattr(o, "lf", False) or getattr(o, "failedfirst", False):
        yield from (str(k) for k in (cache.get("cache/lastfailed", {}) or {}))
    if getattr(o, "stepwise", False) or getattr(o, "stepwise_skip", False):
        sw = cache.get("cache/stepwise", None)
        if isinstance(sw, str):
            yield sw
        elif isinstance(sw, dict):
            yield from (str(v) for v in sw.values() if isinstance(v, str))
