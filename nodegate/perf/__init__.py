"""Performance acceptance: measured bandwidth and FLOPS judged per GPU, link and HCA (docs/perf.md).

Pipeline (as burn-in): spec (``spec.PerfSpec``) -> script (``perf.sh`` rendered by ``script``;
ONE exec per node, streamed, framed) -> bundle keys ``perf.*`` (``runner``) -> parsers
(nodegate/parsers/perf_*.py) -> model (``model``: Measurement per GPU / link / HCA) via
``extract`` -> validity from GPU state sampled during each test (``validity``) -> the four rules
(``rules``: SKU floor from ``floors``, in-node peers, fleet, baseline) -> reports (``report``).

The measurement model and the floor table live in nodegate.perfmodel (below the parsers and reports).
"""
