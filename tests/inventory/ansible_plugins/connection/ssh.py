"""ansible-core's ``ssh``, recording instead of connecting (see _recorder.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _recorder import real_plugin, recorder  # noqa: E402

_real = real_plugin("ssh")
DOCUMENTATION = _real.DOCUMENTATION
Connection = recorder(_real.Connection, "ssh")
