"""Fingerprints of landed raw files, for noticing new or changed raw date folders.

A fingerprint is the first 16 hex digits of SHA-256 over the sorted `relative path:size` lines of
a (source, date) folder's raw files: a new file, a removed file or a file that grew changes it.
"""

from __future__ import annotations

import hashlib

from upath import UPath

from distill_assets.lib.rawfiles import list_partitions, list_raw_files, partition_dir
from distill_assets.lib.settings import SOURCES

FINGERPRINT_HEX_DIGITS = 16


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:FINGERPRINT_HEX_DIGITS]


def folder_fingerprint(raw_root: str, source: str, day: str) -> str:
    """Return the fingerprint of one source's raw files for one ingest date."""
    folder = partition_dir(raw_root, source, day)
    lines = [
        f"{UPath(path).relative_to(folder).as_posix()}:{UPath(path).stat().st_size}"
        for path in list_raw_files(raw_root, source, day)
    ]
    return _digest(lines)


def landed(raw_root: str, sources: tuple[str, ...] = SOURCES) -> dict[str, str]:
    """Return `source/date` → fingerprint for every raw date folder holding raw files."""
    found = {}
    for source in sources:
        for day in list_partitions(raw_root, source):
            if list_raw_files(raw_root, source, day):
                found[f"{source}/{day}"] = folder_fingerprint(raw_root, source, day)
    return found


def date_of(key: str) -> str:
    """Return the date of a `source/date` key."""
    return key.rsplit("/", 1)[1]


def date_fingerprint(fingerprints: dict[str, str], day: str) -> str:
    """Return one fingerprint over every source's folder of `day` (the run key of its ingest)."""
    return _digest(sorted(f"{k}={v}" for k, v in fingerprints.items() if date_of(k) == day))
