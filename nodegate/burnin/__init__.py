"""Burn-in: checks that only mean something under load, sampled while the GPUs work.

Pipeline (as for the probe): spec (``spec.BurninSpec``) -> script (``burnin.sh`` with the shared
prelude of ``nodegate.phase``, rendered by ``script.render``; ONE exec per node, streamed, framed)
-> transport with a stop switch (``nodegate.phase.exec.run_stream``) -> bundle keys ``burnin.*``
(``runner``) -> time series (``series``) -> rules (``rules``: one Result per node or GPU) -> SVG
plot (``plot.svg_for_node``).
See docs/burnin.md.
"""

from .plot import svg_for_node
from .spec import BurninSpec, burnin_spec, load_burnin_spec, parse_duration

__all__ = ["BurninSpec", "burnin_spec", "load_burnin_spec", "parse_duration", "svg_for_node"]
