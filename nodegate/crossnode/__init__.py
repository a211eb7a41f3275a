"""Cross-node acceptance (issue 38): prove the fabric between nodes, and name the node, HCA or
cable at fault. docs/crossnode.md describes the stages, the cost and the thresholds.

Layers (the engine's import contracts): this package imports no pytest and nothing from
``nodegate.session`` or the plugins; it reads node evidence only through ``nodegate.bundle`` and
``nodegate.safeio`` and parses it with ``nodegate.parsers``. The second round (the engine's
presentation: CLI option, pytest items, JUnit/HTML/RMA rows, the node's overall verdict) calls:

- ``run_phase(nodes, config, launcher=..., evidence_dir=...)`` -> ``PhaseResult`` (phase.py)
- ``replay_phase(nodes, config, evidence_dir)`` -> ``PhaseResult`` re-judged from recorded evidence
- ``plan_text(nodes, config)`` -> the ``--plan`` printout (jobs and rounds, nothing launched)
- ``static_fabric(...)`` -> HCA ports and cable rows (Stage A, no GPU time) (static.py)
- the rows: ``JobRow``, ``NodeRow``, ``FaultRow``, ``CableRow`` (model.py)
"""

from __future__ import annotations

_EXPORTS = {
    "JobRow": "model", "NodeRow": "model", "FaultRow": "model", "CableRow": "model", "PhaseResult": "model",
    "NodeState": "model", "RuleCheck": "model",
    "run_phase": "phase", "replay_phase": "phase", "plan_text": "phase", "PhaseConfig": "phase",
    "PhaseNode": "phase", "PhaseError": "phase",
    "static_fabric": "static", "StaticResult": "static",
    "CrossnodeSpec": "spec",
    "MpirunLauncher": "launchers", "SrunLauncher": "launchers", "SshPairLauncher": "launchers",
    "mpijob_manifest": "k8s",
}


def __getattr__(name: str):
    # lazy: nodegate.spec.model imports crossnode.spec, which must not pull the whole phase in
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(name)
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)


__all__ = sorted(_EXPORTS)
