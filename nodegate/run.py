"""A fleet run: every node of one pytest session, gathered in the background or loaded from
bundles, served as facts to the engine (nodegate.engine) one node at a time.

``FleetRun`` composes three parts, each its own module (issue 40 item 2: the 560-line class mixed
them): ``nodegate.fleetrun.registry`` (the nodes, lazy loading and release), ``.identity``
(machine identity: one machine answering for two nodes), ``.background`` (gathering while the
tests run; a node waited for once). The gathering itself is nodegate.gather (``gather_node``,
``gather_fleet``, ``GatherOptions``, ``NodeJob``: re-exported here, where callers find them).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from .bundle import Bundle, now_iso
from .collect import NodeFacts
from .fleetrun.background import Gathering
from .fleetrun.identity import (ID_KEYS, ClashGroup, IdentityIndex, IdentityView, address_of,  # noqa: F401
                                address_twins, bundle_ids)
from .fleetrun.registry import NodeRegistry
from .gather import GATHER_NICE, GatherOptions, NodeJob, gather_fleet, gather_node  # noqa: F401

try:  # pytest's stash key; the run is usable without pytest too
    import pytest

    RUN_KEY = pytest.StashKey["FleetRun"]()
except Exception:  # pragma: no cover
    RUN_KEY = None


@dataclass
class FleetRun(NodeRegistry, IdentityIndex, Gathering):
    """Everything one pytest session knows about the fleet (see docs/contributing.md contract).

    ``bundles``/``facts``: node name -> Bundle / NodeFacts, in inventory order once the run is
    complete. While a background gather (``start_gather``) is running they hold only the nodes
    merged so far: ``wait(node)`` blocks until that node is gathered and merges it; ``wait_all()``
    merges every node and restores inventory order. Both are called from pytest's main thread
    only, so the dicts are never mutated by another thread while pytest iterates them.
    ``order``: every node name in inventory order, known before any node is contacted.

    Bounded memory (``streaming``, docs/performance.md "4,096 nodes"): a node's Bundle and
    NodeFacts are loaded when its items need them (``wait``: from the gathering process's bundle,
    or from its directory on ``--replay``) and dropped by ``release(node)`` once its items are
    done; ``bundles``/``facts`` then hold the nodes being judged, and a released node is read
    again from disk if asked for. ``wait_all()`` still waits for the whole gather but merges
    nothing. ``on_release`` callables get ``(node, bundle, facts)`` before a node is dropped
    (the reports keep a summary of it). ``all_nodes``: every node of the run; ``nodes``: the
    ones whose items are being collected (a shard of them, nodegate.session.shards)."""

    bundles: dict[str, Bundle] = field(default_factory=dict)
    facts: dict[str, NodeFacts] = field(default_factory=dict)
    spec: dict = field(default_factory=dict)
    spec_errors: dict[str, str] = field(default_factory=dict)
    #: node -> where its spec came from ("inventory <file>", "--spec <file>", "bundle meta.json",
    #: "built-in defaults (...)"), shown in every report (nodegate.specsource)
    spec_source: dict[str, str] = field(default_factory=dict)
    #: node -> the raw spec mapping behind ``spec`` (handed to xdist workers)
    spec_raw: dict[str, dict] = field(default_factory=dict)
    #: node -> the other nodes of the run at the same address (host and port of the target URL):
    #: one machine answers for all of them (their items wait for each other: ``identity_clashes``)
    address_twins: dict[str, list[str]] = field(default_factory=dict)
    #: node -> (boot id, machine id) of nodes of the run not loaded here (an xdist worker's others)
    peer_ids: dict[str, tuple] = field(default_factory=dict)
    _id_index: tuple = field(default=(), repr=False)
    _n_nodes: tuple = field(default=(None, 0), repr=False)
    bundles_dir: Path | None = None
    reports_dir: Path | None = None
    #: the inventory sources as messages name them (nodegate.inventory.sources_label), None: no inventory
    inventory_path: str | None = None
    started_at: str = field(default_factory=now_iso)
    gather_s: float = 0.0
    mode: str = "ssh"  # ssh | local | replay
    order: list[str] = field(default_factory=list)
    overlapped: bool = False  # tests ran while nodes were still being gathered
    # -- selection (nodegate.session.selection): what the reports need to say "not evaluated"
    #: every node of the run (inventory after --limit, or the bundles replayed), in order
    targets: list[str] = field(default_factory=list)
    #: nodes with at least one selected item after -k/-m/--lf/--deselect (None until collected)
    selected: list[str] | None = None
    #: node -> number of its selected items (collection)
    items_selected: dict[str, int] = field(default_factory=dict)
    #: node -> number of its items that ran (their setup was reported)
    items_ran: dict[str, int] = field(default_factory=dict)
    #: nodes of a sharded run whose shard was not collected (yet): the run stopped first (-x,
    #: --maxfail, an interrupt); never "deselected" (nodegate.session.shards)
    not_collected: set[str] = field(default_factory=set)
    _arrived: dict = field(default_factory=dict, repr=False)      # node -> (Bundle, NodeFacts), any thread
    _events: dict = field(default_factory=dict, repr=False)       # node -> threading.Event
    _thread: threading.Thread | None = field(default=None, repr=False)
    _t0: float = field(default=0.0, repr=False)
    _errors: int = field(default=0, repr=False)
    _failure: BaseException | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _proc: object = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)   # the thread pool's
    _reason_box: object = field(default=None, repr=False)      # the gathering process's (interrupt.ReasonBox)
    _prefetch: object = field(default=None, repr=False)        # a serial replay's (fleetrun.prefetch.Prefetch)
    streaming: bool = False
    on_release: list = field(default_factory=list, repr=False)
    shard: list[str] | None = field(default=None, repr=False)     # nodes collected now (shards)
    _paths: dict = field(default_factory=dict, repr=False)         # node -> bundle dir (lazy / released)
    _released: set = field(default_factory=set, repr=False)
    _roots: dict = field(default_factory=dict, repr=False)         # node -> its --replay root
    _gpu_ids: dict = field(default_factory=dict, repr=False)       # released node -> [(index, serial, uuid)]
    _light: set = field(default_factory=set, repr=False)           # nodes in memory with ID_KEYS only
    surplus: dict[str, int] = field(default_factory=dict, repr=False)  # node -> GPUs seen beyond gpu.count
