"""Post-upgrade regression gate: compare each node with its last accepted state (``--baseline DIR``).

Layers (imports point one way): ``spec`` (the ``baseline:`` spec section) -> ``compare``
(pure rules over facts: Findings of Change/Regression) -> ``engine`` (reads NodeFacts of both
sides, evaluates the check registry on both, builds a NodeComparison) -> ``run`` (BaselineRun:
baseline bundles, comparisons, pytest items and their verdicts) -> ``render`` (changes.json,
HTML change tables) and ``exitcodes``. The pytest side is plugins/nodegate_baseline.py; the
rules are documented in docs/baseline.md.
"""

from .exitcodes import EXIT_REGRESSIONS_ONLY, final_exit_status
from .model import GPU_KINDS, KINDS, NODE_KINDS, Change, GpuRef, NodeComparison, Regression
from .spec import BaselineSpec, EccGrowth, baseline_spec

__all__ = ["BaselineSpec", "EccGrowth", "baseline_spec", "Change", "Regression", "GpuRef", "NodeComparison",
           "KINDS", "NODE_KINDS", "GPU_KINDS", "EXIT_REGRESSIONS_ONLY", "final_exit_status"]
