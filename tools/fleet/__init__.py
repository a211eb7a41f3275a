"""Simulated GPU fleet: YAML node profiles -> chroot roots served by real OpenSSH sshd on loopback.

Public API:
- ``Fleet(profiles, workdir=None, *, run_id=None, spec=None)``: context manager; see fleet.py.
- ``load_profiles(dir=PROFILES_DIR)`` / ``load_profile(name)`` -> Profile (profile.py).
- ``render_node(profile)`` -> NodeRender (tree + tool answers), ``expand(profile, node, checks)``.
- ``sshd_available()`` -> None or the reason the fleet cannot run here.
"""

from .expect import expand, gpu_slot_count, registry_checks
from .fleet import Fleet, FleetNode, node_address
from .profile import PROFILES_DIR, Profile, ProfileError, load_profile, load_profiles
from .render import render_node
from .sshd import sshd_available

__all__ = ["Fleet", "FleetNode", "node_address", "Profile", "ProfileError", "load_profile", "load_profiles",
           "PROFILES_DIR", "render_node", "expand", "gpu_slot_count", "registry_checks", "sshd_available"]
