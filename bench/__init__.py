"""nodegate's fleet benchmark (``make bench``; see docs/performance.md)."""
