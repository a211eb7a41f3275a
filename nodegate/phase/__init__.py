"""The machinery both second-exec phases share: the burn-in (nodegate.burnin) and the
performance phase (nodegate.perf) import it; it imports neither.

``exec``: one long exec per node with a deadline and a stop switch (Ctrl-C). ``script``: the
shared shell prelude (prelude.sh: framing, heartbeats, exit traps) spliced into each phase's
script, field filling, and the stream splitter. ``runner``: one node's run record around the
exec, and the fleet loop (one thread per node, Ctrl-C records what came back).
"""
