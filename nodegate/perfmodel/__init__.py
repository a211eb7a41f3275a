"""Performance figures as data: the measurement model (``model``) and the per-SKU floor table
(``floors``, from nodegate/data/perf_floors.yaml).

Below the parsers, the perf phase and the reports, which all read them: the perf-output parsers
(parsers/perf_*.py) produce ``Measurement``s, the phase (nodegate.perf) judges them, the reports
render them. They were modules of nodegate.perf, so the parsers and the reports imported a phase
(issue 40, "lower layers reach up"); nodegate.perf.model and nodegate.perf.floors still name them.
"""
