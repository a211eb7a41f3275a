"""GPU model matching by whole words against the known product names (issue 39.3).

``gpu.model: H200`` accepted "NVIDIA GH200 480GB" and "NVIDIA H200 NVL" while the check compared
substrings. Here names are compared as token sequences (runs of ASCII letters and digits, lower
case: "H100-SXM4" -> ["h100", "sxm4"]), and nodegate/data/gpu_products.yaml lists the distinct
products that share words (H100 / H100 NVL / H100 PCIe, H200 / H200 NVL / GH200, B200 / GB200,
the RTX PRO 6000 Blackwell editions):

- ``resolve(product_name)``: the longest listed name whose tokens stand contiguously in the
  product name's (None when none does);
- ``model_matches(spec_value, product_name)``: a listed spec value accepts exactly the product it
  resolves to; any other value accepts a product name holding its tokens contiguously.

Linear in the names' lengths (tokens are at most 64 a name); no regex built from input.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from .. import yamlio

_TOKEN = re.compile(r"[a-z0-9]+")
MAX_TOKENS = 64


def tokens(name: str | None) -> tuple[str, ...]:
    return tuple(_TOKEN.findall((name or "").lower()))[:MAX_TOKENS]


def _contains(hay: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return n > 0 and any(hay[i:i + n] == needle for i in range(len(hay) - n + 1))


@lru_cache(maxsize=1)
def known_products() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(name, tokens) of every listed product, longest token sequence first."""
    raw = yamlio.safe_load(resources.files("nodegate").joinpath("data/gpu_products.yaml").read_text())
    out = [(str(p["name"]), tokens(str(p["name"]))) for p in raw["products"]]
    return tuple(sorted(out, key=lambda x: -len(x[1])))


def resolve(product_name: str | None) -> str | None:
    """The listed product ``product_name`` is (the longest listed name inside it), or None."""
    t = tokens(product_name)
    for name, nt in known_products():
        if _contains(t, nt):
            return name
    return None


def listed(value: str) -> str | None:
    """The listed product name equal (as tokens) to ``value``, or None."""
    t = tokens(value)
    return next((name for name, nt in known_products() if nt == t), None)


def model_matches(value: str, product_name: str | None) -> bool:
    """Whether ``gpu.model`` ``value`` accepts the driver's ``product_name`` (see the module)."""
    want = listed(value)
    if want is not None:
        return resolve(product_name) == want
    return _contains(tokens(product_name), tokens(value))
