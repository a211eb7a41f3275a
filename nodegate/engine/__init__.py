"""The evaluation engine: evidence facts + spec + selection -> results -> the node verdict.

The one path of every run mode (docs/architecture.md): a run mode (live, --replay, shards, any
selection, site-only paths, --baseline, --burn-in, --perf) gathers or loads a node's evidence,
nodegate.collect turns it into facts, and then

- ``evaluate(facts, spec, selection, node)`` / ``evaluate_item(...)`` (``evaluate``): each selected
  (check, GPU) pair -> an ``ItemResult`` (its Result, the record every report reads, the JUnit
  properties), the catalog's rules (nodegate.checks) doing the judging;
- ``fold(parts, node)`` (``fold``): a GPU check's per-GPU results on one node -> the one item
  that presents them (the worst outcome, each failing GPU named; the per-GPU records kept);
- ``node_verdict(counts, expected, ...)`` (``verdict``): a node's results -> accepted, need
  action or not evaluated, with the reason: THE one place a node's verdict is decided.

Pure: imports no pytest, gatherer, transport, terminal, session or report (pyproject.toml's
import contracts, checked by ``make test``). pytest is the interface (items select and present
results: nodegate.session.verdicts), not the judge.
"""

from __future__ import annotations

from .evaluate import (IDENTITY_CHECK, PROP_KEYS, ItemResult, NodeContext, clash_message, evaluate,
                       evaluate_item, item_record)
from .fold import FoldedResult, fold
from .verdict import (ACCEPTED, NEED_ACTION, NOT_EVALUATED, STATUSES, node_verdict, selection_reasons,
                      verdict)

__all__ = ["ACCEPTED", "FoldedResult", "fold", "IDENTITY_CHECK", "ItemResult", "NEED_ACTION", "NOT_EVALUATED", "NodeContext", "PROP_KEYS",
           "STATUSES", "clash_message", "evaluate", "evaluate_item", "item_record", "node_verdict", "selection_reasons", "verdict"]
