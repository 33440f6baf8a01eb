"""First-occurrence de-duplication of a partition's records, chunk by chunk, in bounded work.

A source whose records carry a key that must be unique within a partition (an escalation id, a
telemetry event id, a revision turn and iteration) keeps the first accepted record of each key, in
(`source_file`, `line_no`) order, and quarantines the later ones. The parse names the key of every
record it accepts (`dedup_key`, NULL for a rejected record); `Deduplicator.apply` then decides, per
chunk and in chunk order, which keyed records repeat a key, in vectorized Polars and NumPy:

- within the chunk, the first row of each key (the chunk's rows are in input order);
- across chunks, a lookup of the chunk's first rows in `SeenKeys`: the keys of the earlier chunks
  as sorted runs of two independent 64-bit hashes (128 bits: a false match needs both to collide),
  each with where its first record is and, when lines are compared, a hash of that line. Runs are
  merged like a log-structured merge tree (a run is merged into the one before it while it is at
  least half its size), so a lookup is a binary search in O(log n) runs and adding a chunk costs
  amortized O(log n) per key, however large the partition grows — no scan of every key seen so far.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl

KEY, REF = "dedup_key", "first_ref"
_SEEDS = (0x5EED_0001, 0x5EED_0002)
_LINE_SEED = 0x5EED_0003
_PLACEHOLDER = re.compile(r"\{(key|first)\}")


@dataclass(frozen=True)
class Dedup:
    """How a source quarantines a repeated key: the first accepted record of a key is kept.

    `detail` is the quarantine detail of a repeat, with `{key}` (the key) and `{first}` (where the
    kept record is, `source_file:line_no`) filled in; `conflict_detail`, when set, replaces it for
    a repeat whose line differs from the kept record's (lines compared by a 64-bit hash).
    """

    reason: str
    detail: str
    conflict_detail: str | None = None

    def render(self, template: str) -> pl.Expr:
        """Return `template` as an expression over the columns `dedup_key` and `first_ref`."""
        parts: list[pl.Expr] = []
        position = 0
        for match in _PLACEHOLDER.finditer(template):
            parts.append(pl.lit(template[position : match.start()]))
            parts.append(pl.col(KEY if match.group(1) == "key" else REF))
            position = match.end()
        parts.append(pl.lit(template[position:]))
        return pl.concat_str(parts)


@dataclass
class _Run:
    """Keys sorted by their first hash, with where each one's first record is."""

    h1: np.ndarray
    h2: np.ndarray
    file: np.ndarray
    line_no: np.ndarray
    line_hash: np.ndarray

    def __len__(self) -> int:
        return len(self.h1)

    @staticmethod
    def merged(a: _Run, b: _Run) -> _Run:
        order = np.argsort(np.concatenate([a.h1, b.h1]), kind="stable")
        return _Run(
            *(
                np.concatenate([getattr(a, n), getattr(b, n)])[order]
                for n in ("h1", "h2", "file", "line_no", "line_hash")
            )
        )


@dataclass
class Match:
    """Per queried key: whether it was seen, and where its first record is (else -1)."""

    found: np.ndarray
    file: np.ndarray
    line_no: np.ndarray
    line_hash: np.ndarray


@dataclass
class SeenKeys:
    """The keys accepted in earlier chunks of a partition (see the module docstring)."""

    runs: list[_Run] = field(default_factory=list)

    def __len__(self) -> int:
        return sum(len(r) for r in self.runs)

    def lookup(self, h1: np.ndarray, h2: np.ndarray) -> Match:
        """Find keys given by their two hashes; each is in at most one run."""
        n = len(h1)
        match = Match(
            np.zeros(n, bool),
            np.full(n, -1, np.int32),
            np.full(n, -1, np.int64),
            np.zeros(n, np.uint64),
        )
        for run in self.runs:
            start = np.searchsorted(run.h1, h1)
            pending = np.flatnonzero(start < len(run))
            offset = 0
            # keys whose first hash collides sit next to each other: step through them
            while pending.size:
                at = start[pending] + offset
                inside = at < len(run)
                pending, at = pending[inside], at[inside]
                same_h1 = run.h1[at] == h1[pending]
                pending, at = pending[same_h1], at[same_h1]
                hit = run.h2[at] == h2[pending]
                rows, where = pending[hit], at[hit]
                match.found[rows] = True
                match.file[rows] = run.file[where]
                match.line_no[rows] = run.line_no[where]
                match.line_hash[rows] = run.line_hash[where]
                pending = pending[~hit]
                offset += 1
        return match

    def add(
        self,
        h1: np.ndarray,
        h2: np.ndarray,
        file: np.ndarray,
        line_no: np.ndarray,
        line_hash: np.ndarray,
    ) -> None:
        """Add keys not seen before (each once), then merge runs that grew comparable."""
        if not len(h1):
            return
        order = np.argsort(h1, kind="stable")
        self.runs.append(_Run(h1[order], h2[order], file[order], line_no[order], line_hash[order]))
        while len(self.runs) > 1 and 2 * len(self.runs[-1]) >= len(self.runs[-2]):
            last = self.runs.pop()
            self.runs[-1] = _Run.merged(self.runs[-1], last)


class Deduplicator:
    """Quarantine repeated keys across the chunks of one partition, given in input order."""

    def __init__(self, rule: Dedup) -> None:
        """Start with no key seen."""
        self.rule = rule
        self.seen = SeenKeys()
        self.files: list[str] = []
        self.file_index: dict[str, int] = {}

    def apply(self, chunk: pl.DataFrame) -> pl.DataFrame:
        """Return the repeats of `chunk`: their `row` (position in the chunk) and `detail`.

        `chunk` holds `dedup_key` (NULL for rows not taking part), `source_file`, `line_no` and,
        when the rule compares lines, `line`, in input order.
        """
        for name in chunk.get_column("source_file").unique(maintain_order=True).drop_nulls():
            if name not in self.file_index:
                self.file_index[name] = len(self.files)
                self.files.append(name)
        compare = self.rule.conflict_detail is not None
        rows = (
            chunk.lazy()
            .with_row_index("row")
            .filter(pl.col(KEY).is_not_null())
            .select(
                "row",
                KEY,
                pl.col(KEY).hash(_SEEDS[0]).alias("h1"),
                pl.col(KEY).hash(_SEEDS[1]).alias("h2"),
                pl.col("source_file")
                .replace_strict(self.file_index, return_dtype=pl.Int32)
                .alias("file"),
                pl.col("line_no").cast(pl.Int64),
                (pl.col("line").hash(_LINE_SEED) if compare else pl.lit(0, pl.UInt64)).alias(
                    "line_hash"
                ),
            )
            .collect()
        )
        firsts = rows.unique(KEY, keep="first", maintain_order=True)
        match = self.seen.lookup(firsts["h1"].to_numpy(), firsts["h2"].to_numpy())
        new = firsts.filter(pl.Series(~match.found))
        self.seen.add(
            *(new[n].to_numpy() for n in ("h1", "h2", "file", "line_no", "line_hash")),
        )
        found = pl.Series(match.found)
        kept = firsts.select(
            KEY,
            pl.col("row").alias("first_row"),
            found.alias("seen"),
            pl.when(found).then(pl.Series(match.file)).otherwise("file").alias("first_file"),
            pl.when(found)
            .then(pl.Series(match.line_no))
            .otherwise("line_no")
            .alias("first_line_no"),
            pl.when(found)
            .then(pl.Series(match.line_hash))
            .otherwise("line_hash")
            .alias("first_line_hash"),
        )
        repeats = (
            rows.join(kept, on=KEY, how="left")
            .filter(pl.col("seen") | (pl.col("row") != pl.col("first_row")))
            .sort("row")
        )
        names = pl.Series(self.files, dtype=pl.String).gather(repeats["first_file"])
        detail = self.rule.render(self.rule.detail)
        if compare:
            conflict = self.rule.render(self.rule.conflict_detail or "")
            detail = (
                pl.when(pl.col("line_hash") == pl.col("first_line_hash"))
                .then(detail)
                .otherwise(conflict)
            )
        return repeats.with_columns(
            pl.concat_str(names, pl.lit(":"), pl.col("first_line_no").cast(pl.String)).alias(REF)
        ).select("row", detail.alias("detail"))
