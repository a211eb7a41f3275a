"""Real launchers over simulated nodes (issue 38 item 8): GPU-free stand-ins for nccl-tests and
perftest that are themselves MPI / socket programs, and an SSH fleet whose chroot node roots can
run Open MPI's daemons.

- ``build_shims(dir)``: compiles tools/mpi/nccl_tests_shim.c with ``mpicc`` (all_reduce_perf,
  alltoall_perf) and tools/mpi/perftest_shim.c with ``cc`` (ib_write_bw, ib_write_lat).
- ``MpiFleet``: tools/fleet's Fleet whose node roots also hold what ``orted`` needs (its binary,
  the shared libraries ``ldd`` names, Open MPI's and PMIx's MCA components and help files, a
  writable /tmp), the shims, ``/etc/nodegate-node`` (the node's name: every chroot shares one
  kernel hostname) and ``/etc/nodegate-faults`` (``set_faults``).
- ``mpi_unavailable()``: why real MPI cannot run here (the packages to install), or None.
"""

from .build import Shims, build_shims, mpi_unavailable
from .fleet import MpiFleet

__all__ = ["Shims", "build_shims", "mpi_unavailable", "MpiFleet"]
