"""A real Slurm (Debian's slurm-wlm + munge) on this machine for the Slurm example's tests.

Public API: ``SlurmCluster(nodes, workdir=None, *, cpus=1)`` (context manager; cluster.py),
``slurm_available()`` -> None or the reason it cannot run here, ``SlurmUnavailable``.
"""

from .cluster import SlurmCluster, SlurmUnavailable, slurm_available

__all__ = ["SlurmCluster", "SlurmUnavailable", "slurm_available"]
