"""Bounds every parser holds node text to (one place, one meaning; docs/security.md).

- ``MAX_GPUS``: GPUs one node may report, whichever source lists them (``nvidia-smi -q -x``,
  ``-q`` text, ``--query-gpu`` CSV, ``lspci`` display functions, NVML JSON, the ``nvlink``
  listings, clocks samples). Every GPU becomes items of its own: a hostile node listing
  thousands would stall the run (2,000 CSV rows made 44,000 items). The largest real nodes have
  16 (HGX-2/DGX-2); 64 leaves room for what comes. Above it the source is unparsable
  (ParseError), so the node's GPU facts ERROR and no item is made per phantom GPU.
- ``MAX_DIGITS``: digits of one decimal number. Python refuses ``int()`` of more than 4,300
  digits with ValueError (CVE-2020-10735), which escaped as an INTERNALERROR; the largest value a
  node prints is a 64-bit counter (20 digits). Patterns use ``\\d{1,MAX_DIGITS}`` (see ``DIGITS``)
  and ``number()`` refuses longer ones with ParseError.
"""

from __future__ import annotations

from ..errors import ParseError

MAX_GPUS = 64

MAX_DIGITS = 20
#: regex fragment for one bounded decimal number (used inside patterns instead of ``\d+``)
DIGITS = r"\d{1,20}"


class TooManyGpus(ParseError):
    """A source lists more than MAX_GPUS GPUs (a ParseError: the node's GPU facts ERROR; NodeFacts
    never falls back to another source for it)."""


def check_gpu_count(n: int, what: str, running: bool = False) -> None:
    """TooManyGpus when ``n`` GPUs exceed MAX_GPUS (``what`` names the source, e.g. "--query-gpu csv";
    ``running``: ``n`` is a count so far, the source is refused as soon as it passes the cap)."""
    if n > MAX_GPUS:
        listed = f"more than {MAX_GPUS}" if running else str(n)
        raise TooManyGpus(f"{what} lists {listed} GPUs: more than any node has ({MAX_GPUS})")


def number(s: str, field: str = "value", base: int = 10) -> int:
    """``int(s, base)`` for node text: ParseError (never ValueError) for more than MAX_DIGITS
    digits (16 hex digits: a 64-bit value) or no number."""
    t = s.strip()
    digits = t.lstrip("+-")
    if base == 16 and digits[:2].lower() == "0x":
        digits = digits[2:]
    if len(digits) > (16 if base == 16 else MAX_DIGITS):
        raise ParseError(f"{field}: a number of {len(digits)} digits: more than any counter has")
    try:
        return int(t, base)
    except ValueError:
        raise ParseError(f"{field}: not a number: {t[:60]!r}") from None
