"""Limits of the raw reader (docs/operations.md#nothing-is-lost, bounded memory).

A raw record (one JSON line) longer than `MAX_RECORD_BYTES` is not parsed: it becomes a
quarantine row with reason `too_large` holding its first `QUARANTINED_PREFIX_BYTES` bytes, and
the reader skips the rest of it without holding it in memory. The largest legitimate records
(agent traces with long tool outputs) are tens of kilobytes; 8 MiB leaves two orders of
magnitude of headroom while keeping one partition's peak memory to a few blocks.
"""

MAX_RECORD_BYTES = 8 << 20
QUARANTINED_PREFIX_BYTES = 1024
