"""nodegate: acceptance suite for GPU compute nodes.

Pipeline (imports point one way, left to right):
inventory + spec -> transport -> probe -> bundle -> parsers -> facts -> checks -> reports.
"""

__version__ = "0.1.0"
