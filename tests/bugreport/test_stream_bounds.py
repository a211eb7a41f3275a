"""Issue 31 items 2 and 4: a bug report converts line by line, in time linear in its text and memory
bounded by what it keeps, and nothing in one log stops the run (nodegate/bugreport/stream.py).

Budgets are generous (CPU seconds of this process, tracemalloc peaks); the figures measured on
hostile logs are in bench/bugreport_bounds.py."""

from __future__ import annotations

import gzip
import time
import tracemalloc
from pathlib import Path

import pytest

from nodegate import bugreport
from nodegate.bugreport import convert, load_bug_report
from nodegate.bugreport.kernel import persistenced_from_journal
from nodegate.bugreport.stream import MAX_SECTION_CHARS
from nodegate.collect import NodeFacts

SEP = "_" * 44
SCAN = f"{SEP}\n\nScanning kernel log files for NVIDIA kernel messages:\n\n  journalctl -b -0:\n"
START = f"{SEP}\n\nStart of NVIDIA bug report log file.\n\nuname: Linux gpu042 6.8.0-50-generic #51 x86_64 GNU/Linux\n"


def _gz(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.log.gz"
    with gzip.open(p, "wb", compresslevel=6) as f:
        f.write(text.encode())
    return p


def _peak(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------ item 2: containment
@pytest.mark.parametrize("text", [
    SCAN.replace("-b -0", "-b -" + "9" * 5000) + "x nvidia-persistenced[1]: Started (1)\n",   # the issue's
    SCAN + f"x nvidia-persistenced[{'9' * 5000}]: Started\n",                                   # the issue's
    START + f"nvidia-bug-report.sh Version: {'9' * 5000}\n",                                     # another field
    f"{SEP}\n\ndmesg:\n[{'9' * 5000}.1] NVRM: Xid (PCI:0000:19:00): {'9' * 5000}, x\n",           # another section
])
def test_five_thousand_digit_numbers_convert_without_an_exception(text):
    b = convert(START + text, "x")
    NodeFacts(b)   # and the facts read without ValueError: each is a value or an EvidenceError
    for attr in ("kernel_events", "persistenced"):
        try:
            getattr(NodeFacts(b), attr)
        except Exception as e:   # noqa: BLE001
            assert type(e).__name__ == "EvidenceError", e


def test_any_exception_of_one_log_makes_that_node_unreadable_and_the_next_log_converts(tmp_path, monkeypatch):
    bad = _gz(tmp_path, "bad", START + SCAN + "x nvidia-persistenced[1]: Started (1)\n")
    good = _gz(tmp_path, "good", START)

    def boom(*a, **k):
        raise RuntimeError("a parser bug")

    monkeypatch.setattr(bugreport, "convert_stream", boom)
    b = load_bug_report(bad)
    assert (b.meta["status"], b.gather_error) == ("unreadable", f"unreadable: {bad}: RuntimeError: a parser bug")
    monkeypatch.undo()
    assert load_bug_report(good).meta["status"] == "ok"


# ------------------------------------------------------------------ item 4: linear time
def test_persistenced_from_the_journal_is_linear():
    n = 60_000   # the former list in/remove: ~n^2/2 = 1.8e9 comparisons (minutes); now a count per pid
    lines = [f"x nvidia-persistenced[{i}]: Started ({i})" for i in range(n)] + \
            [f"x nvidia-persistenced[{i}]: Shutdown ({i})" for i in range(0, n, 2)]
    t0 = time.process_time()
    running = persistenced_from_journal(lines)
    assert time.process_time() - t0 < 10.0
    assert running == list(range(1, n, 2))


def test_started_twice_needs_two_shutdowns():
    lines = ["a nvidia-persistenced[5]: Started (5)", "a nvidia-persistenced[5]: Started (5)",
             "a nvidia-persistenced[5]: Shutdown (5)"]
    assert persistenced_from_journal(lines) == [5]


def test_a_large_journal_converts_in_bounded_cpu_time(tmp_path):
    n = 40_000
    text = START + SCAN + "".join(f"Nov 16 11:{i // 60 % 60:02d}:{i % 60:02d} h nvidia-persistenced[{i}]: Started ({i})\n"
                                  for i in range(n)) + "".join(
        f"Nov 16 12:00:00 h nvidia-persistenced[{i}]: Shutdown ({i})\n" for i in range(n))
    p = _gz(tmp_path, "journal", text)
    t0 = time.process_time()
    b = load_bug_report(p)
    assert time.process_time() - t0 < 30.0      # measured ~1-2 s (bench/bugreport_bounds.py)
    assert b.get("persistenced.process").text.endswith("processes: 0\n")


# ------------------------------------------------------------------ item 4: bounded memory
def test_a_gzip_of_newlines_is_read_in_memory_independent_of_its_length(tmp_path):
    p = _gz(tmp_path, "newlines", START + f"{SEP}\n\ndmesg:\n" + "\n" * (32 * 1024 * 1024))   # 32 MB of text, 32 KB gzip
    b, peak = _peak(lambda: load_bug_report(p))
    assert b.meta["status"] == "ok"
    assert peak < 8 * 1024 * 1024, peak          # measured < 1 MB (the old reader: 1.4 GB for this text)


def test_peak_memory_is_a_fixed_multiple_of_the_largest_kept_section(tmp_path):
    kept = 4 * 1024 * 1024
    text = START + f"{SEP}\n\nnvidia-smi -q\n" + "a\n" * (kept // 2) + f"{SEP}\n\ndmesg:\n" + \
        "".join(f"[{i}.0] NVRM: short {i}\n" for i in range(kept // 32))
    p = _gz(tmp_path, "kept", text)
    b, peak = _peak(lambda: load_bug_report(p))
    largest = max(len(ev.stdout) for ev in b.items.values())
    assert largest >= kept
    assert peak < 16 * largest, (peak, largest)   # measured ~4x the largest kept section


def test_a_section_over_the_item_cap_is_a_truncated_item_not_a_larger_one(tmp_path):
    p = _gz(tmp_path, "huge", START + f"{SEP}\n\nnvidia-smi -q\n" + "x" * 1000 + "\n" + ("y" * 99 + "\n") *
            (MAX_SECTION_CHARS // 100 + 10))
    b = load_bug_report(p)
    ev = b.get("smi.q")
    assert ev.status == "truncated" and len(ev.stdout) <= MAX_SECTION_CHARS
    assert "per-item cap" in (ev.problem() or "")


def test_a_line_without_end_is_cut_and_never_held_whole(tmp_path):
    p = _gz(tmp_path, "oneline", START + f"{SEP}\n\nnvidia-smi -q\n" + "z" * (64 * 1024 * 1024))
    b, peak = _peak(lambda: load_bug_report(p))
    assert b.meta["status"] == "ok" and peak < 32 * 1024 * 1024, peak
