"""The performance-phase profiles (tools/fleet/profiles/perf/*.yaml), resolved against the main
profiles (their ``base:`` is an ordinary profile such as h200-580-open-healthy)."""

from __future__ import annotations

from .profile import PROFILES_DIR, Profile, normalize, read_raw, resolve

PERF_DIR = PROFILES_DIR / "perf"


def load_perf_profiles(include_abstract: bool = False) -> dict[str, Profile]:
    raw = {**read_raw(PROFILES_DIR), **read_raw(PERF_DIR)}
    out = {}
    for name in read_raw(PERF_DIR):
        if name.startswith("_") and not include_abstract:
            continue
        data, chain = resolve(name, raw)
        out[name] = Profile(name, normalize(name, data), chain)
    return out
