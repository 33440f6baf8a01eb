"""Curation decisions proportional to the new day: link state persisted per product partition.

Let G be the candidate graph over the rows decided (after removal by subject): two rows are
linked when they share a content hash, a near-duplicate LSH band key (both rows with shingles)
or, for configs with semantic dedup, a semantic LSH key (both rows with a non-zero embedding).
Every stage of `decide.decide` links only candidates of G: exact dedup groups one content hash;
near dedup links a member to the first member of a band bucket it shares; semantic dedup above
`SEMANTIC_EXACT_LIMIT` near survivors links a member to the first member of a semantic bucket it
shares; contamination and the quality gate are per row. A bucket's first member is the first in
rank order (a total order), which is the same within any set holding the whole bucket. So the
fates of a connected component of G depend on that component alone — except semantic search
over at most `SEMANTIC_EXACT_LIMIT` near survivors, which compares every pair and can link rows
sharing no key: then (and when the previous run searched exactly) the full path runs.

`decide_links` keeps, per row, its component (the smallest `partition, product_row` of the
component when it was last computed) and its fate; a night decides again only the rows added
(new or rewritten partitions, rows no longer excluded) and the components of rows removed or
sharing a key with an added row, and carries every other row's fate. `read_state`/`write_state`
keep that state in the lake, one file per product partition plus a manifest. Only the configs
of `STATE_CONFIGS` keep it: semantic LSH buckets join most rows of a large history in one
component, so with semantic dedup a night would decide about every row anyway
(docs/curation-and-release.md, "Decisions from the link state").
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from distill_assets.defs.curation.decide import (
    FATE_SCHEMA,
    Decisions,
    RowVectors,
    decide,
    rank_order,
)
from distill_assets.lib.lake import (
    global_path,
    parquet_key_values,
    partition_path,
    read_parquet_table,
    table_dir,
    write_parquet_atomic,
)
from distill_assets.lib.minhash import bucket_links, components
from distill_assets.rules.curation import (
    EXACT_DUPLICATE,
    NEAR_DUPLICATE,
    SEMANTIC_SKIPPED_CONFIGS,
)

# configs whose decisions keep the link state: those without semantic dedup. Semantic LSH
# buckets join most of a large history in one component (docs/curation-and-release.md), so for
# the others a night would decide about every row anyway, and the state would only cost more
STATE_CONFIGS: tuple[str, ...] = SEMANTIC_SKIPPED_CONFIGS
# bump when the meaning of the stored state changes: every stored state is then recomputed
STATE_VERSION = "1"
STATE_KEY = b"distill.links_state"
LINK_SCHEMA: dict[str, pl.DataType] = {
    "partition": pl.String(),
    "product_row": pl.Int64(),
    "component": pl.String(),
    "reason": pl.String(),
    "kept_id": pl.String(),
    "eval_file": pl.String(),
}
MANIFEST_SCHEMA: dict[str, pl.DataType] = {"partition": pl.String(), "fingerprint": pl.String()}
ROW_KEY: list[str] = ["partition", "product_row"]


@dataclass(frozen=True)
class LinkState:
    """The link state of the previous run of one config.

    `links` holds `LINK_SCHEMA` for every row that run decided; `fingerprints` the product
    fingerprint of each partition it decided; `semantic_lsh` whether its semantic dedup used LSH.
    """

    links: pl.DataFrame
    fingerprints: dict[str, str]
    semantic_lsh: bool


@dataclass(frozen=True)
class LinkedDecisions:
    """Decisions with the link state they leave (`links`: `LINK_SCHEMA`, every row decided).

    `rows_decided` rows were decided this run (all of them on the full path), in
    `components_touched` components of the previous state; `full` says the full path ran.
    """

    decisions: Decisions
    links: pl.DataFrame
    rows_decided: int
    components_touched: int
    full: bool


def _key_links(rows: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return links `(head, row)` of `rows` sharing a bucket of `keys` (one column per band)."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return bucket_links(rows, keys[rows])


def _hash_codes(keys: pl.DataFrame) -> np.ndarray:
    """Return one uint64 code per distinct content hash (null is one value), as a (rows, 1) key."""
    codes = keys.select(pl.col("content_hash").rank("dense").fill_null(0).cast(pl.UInt64))
    return codes.to_numpy().reshape(-1, 1)


def candidate_components(keys: pl.DataFrame, vectors: RowVectors, *, semantic: bool) -> np.ndarray:
    """Return each row's component of the candidate graph G: the smallest row index in it."""
    rows = np.arange(keys.height, dtype=np.int64)
    links = [_key_links(rows, _hash_codes(keys))]
    links.append(_key_links(np.flatnonzero(vectors.shingled), vectors.band_keys))
    if semantic:
        nonzero = (vectors.embedding_tail > 0) | vectors.embedding_head.any(axis=1)
        links.append(_key_links(np.flatnonzero(nonzero), vectors.semantic_keys))
    a = np.concatenate([pair[0] for pair in links])
    b = np.concatenate([pair[1] for pair in links])
    return components(keys.height, a, b)


def _linked(
    keys: pl.DataFrame, decisions: Decisions, vectors: RowVectors, semantic: bool
) -> pl.DataFrame:
    """Return `LINK_SCHEMA` rows for decided `keys`: fates and components, by partition and row."""
    located = keys.select(ROW_KEY).with_row_index("input_row")
    ordered = located.sort(ROW_KEY)
    order = ordered.get_column("input_row").to_numpy()
    labels = candidate_components(keys[order], vectors.take(order), semantic=semantic)
    names = ordered.select(
        pl.format("{}:{}", "partition", "product_row").gather(labels).alias("component")
    )
    return (
        pl.concat([ordered.select(ROW_KEY), names], how="horizontal")
        .join(decisions.fates, on=ROW_KEY, how="left")
        .select(list(LINK_SCHEMA))
        .cast(LINK_SCHEMA)
    )


def _in_rank_order(keys: pl.DataFrame, fates: pl.DataFrame) -> pl.DataFrame:
    """Return `fates` of every row of `keys` in representative order (as `decide` returns them)."""
    ranked = rank_order(
        keys.select(*ROW_KEY, "trust", "quality_score", "event_time", "id", "source_ref")
    )
    return ranked.select(ROW_KEY).join(fates, on=ROW_KEY, how="left", maintain_order="left")


def _shares_key(
    carried: np.ndarray, added: np.ndarray, keys: pl.DataFrame, vectors: RowVectors, semantic: bool
) -> np.ndarray:
    """Return which `carried` rows share a content hash, band key or semantic key with `added`."""
    hashes = keys.get_column("content_hash")
    hit = hashes.gather(carried).is_in(hashes.gather(added).implode(), nulls_equal=True)
    hit = hit.to_numpy().copy()
    columns = [(vectors.shingled, vectors.band_keys)]
    if semantic:
        nonzero = (vectors.embedding_tail > 0) | vectors.embedding_head.any(axis=1)
        columns.append((nonzero, vectors.semantic_keys))
    for valid, band in columns:
        mine, theirs = np.flatnonzero(valid[carried]), added[valid[added]]
        for j in range(band.shape[1]):
            hit[mine[_found(band[carried[mine], j], band[theirs, j])]] = True
    return hit


def _found(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Return whether each of `values` is in `wanted` (a hash set of the few wanted keys)."""
    return pl.Series(values).is_in(pl.Series(wanted).implode()).to_numpy()


def decide_links(
    keys: pl.DataFrame,
    vectors: RowVectors,
    parts: int,
    *,
    semantic: bool,
    previous: LinkState | None,
    changed: set[str],
) -> LinkedDecisions:
    """Decide every row of `keys` (as `decide` does), deciding again only what the change touched.

    `previous` is the state of the last run (None: full path); `changed` the partitions whose
    product changed since (their stored rows are removed, their current rows added). The result
    is that of `decide` over every row, whatever `previous` holds, as long as it is the state a
    run over the then-current rows left (`read_state` checks the stamps).
    """
    if previous is None or (semantic and not previous.semantic_lsh):
        return decide_all(keys, vectors, parts, semantic=semantic)
    old = previous.links
    current = keys.select(ROW_KEY).with_row_index("key_row")
    stay = old.filter(~pl.col("partition").is_in(sorted(changed))).join(
        current, on=ROW_KEY, how="inner"
    )
    removed = old.join(stay.select(ROW_KEY), on=ROW_KEY, how="anti")
    added = current.join(stay.select(ROW_KEY), on=ROW_KEY, how="anti")
    carried_rows = stay.get_column("key_row").to_numpy().astype(np.int64)
    added_rows = added.get_column("key_row").to_numpy().astype(np.int64)
    sharing = _shares_key(carried_rows, added_rows, keys, vectors, semantic)
    touched = set(removed.get_column("component").to_list())
    touched |= set(stay.filter(pl.Series(sharing)).get_column("component").to_list())
    affected = stay.get_column("component").is_in(sorted(touched)).to_numpy()
    kept = stay.filter(~pl.Series(affected))
    rows = np.sort(np.concatenate([added_rows, carried_rows[affected]]))
    folded = kept.get_column("reason").is_in([EXACT_DUPLICATE, NEAR_DUPLICATE]).fill_null(False)
    survivors = int((~folded).sum())
    subset, subvectors = keys[rows], vectors.take(rows)
    decided = decide(subset, subvectors, parts, semantic=semantic, other_survivors=survivors)
    if decided.semantic_exact:
        return decide_all(keys, vectors, parts, semantic=semantic)
    links = pl.concat(
        [kept.select(list(LINK_SCHEMA)), _linked(subset, decided, subvectors, semantic)],
        how="vertical",
    ).sort(ROW_KEY)
    fates = pl.concat([kept.select(list(FATE_SCHEMA)), decided.fates], how="vertical")
    decisions = Decisions(_in_rank_order(keys, fates).cast(FATE_SCHEMA), False)
    return LinkedDecisions(decisions, links, len(rows), len(touched), False)


def decide_all(
    keys: pl.DataFrame, vectors: RowVectors, parts: int, *, semantic: bool
) -> LinkedDecisions:
    """Return the full path: `decide` over every row, and the components of every row."""
    decisions = decide(keys, vectors, parts, semantic=semantic)
    links = _linked(keys, decisions, vectors, semantic)
    return LinkedDecisions(decisions, links, keys.height, 0, True)


def keeps_link_state(config: str) -> bool:
    """Return whether `config`'s decisions keep the link state (`STATE_CONFIGS`)."""
    return config in STATE_CONFIGS


def forget_state(lake_root: str, config: str) -> None:
    """Delete the manifest of `config`'s link state, so no later run reads the state as current."""
    global_path(lake_root, "curation", links_table(config)).unlink(missing_ok=True)


def links_table(config: str) -> str:
    """Return the lake table (under `curation/`) of a config's link state."""
    return f"{config}_links"


def _stamp(version: str, fingerprint: str, semantic_lsh: bool) -> bytes:
    """Return the stamp of a link file or manifest (what the state was computed from)."""
    fields = {"state": STATE_VERSION, "products": version, "fingerprint": fingerprint}
    return json.dumps({**fields, "semantic_lsh": semantic_lsh}, sort_keys=True).encode()


def read_state(lake_root: str, config: str, version: str) -> LinkState | None:
    """Return the stored link state of `config` for products of `version`, or None when unusable.

    Unusable (so the full path runs): no manifest, another state or product version, or a
    partition of the manifest whose link file is missing or was not written with it.
    """
    manifest = global_path(lake_root, "curation", links_table(config))
    if not manifest.exists():
        return None
    stamp = json.loads(parquet_key_values(manifest).get(STATE_KEY, b"{}"))
    lsh = bool(stamp.get("semantic_lsh"))
    if stamp != json.loads(_stamp(version, "", lsh)):
        return None
    listed = pl.from_arrow(read_parquet_table(manifest).replace_schema_metadata(None))
    fingerprints = dict(listed.select("partition", "fingerprint").iter_rows())
    frames = []
    for partition, fingerprint in sorted(fingerprints.items()):
        path = partition_path(lake_root, "curation", links_table(config), partition)
        if not path.exists():
            return None
        if parquet_key_values(path).get(STATE_KEY) != _stamp(version, fingerprint, lsh):
            return None
        frames.append(pl.from_arrow(read_parquet_table(path).replace_schema_metadata(None)))
    links = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=LINK_SCHEMA)
    return LinkState(links.cast(LINK_SCHEMA), fingerprints, lsh)


def write_state(
    lake_root: str,
    config: str,
    version: str,
    fingerprints: dict[str, str],
    linked: LinkedDecisions,
    *,
    previous: LinkState | None,
) -> list[str]:
    """Store the link state `linked` leaves; return the partitions whose link file was written.

    A partition's file is written when its rows' state or its product fingerprint changed (every
    partition on the full path); files of partitions gone are deleted; the manifest goes last.
    """
    lsh = not linked.decisions.semantic_exact
    folder = table_dir(lake_root, "curation", links_table(config))
    same_state = previous is not None and not linked.full and previous.semantic_lsh == lsh
    before = previous.links.partition_by("partition", as_dict=True) if same_state else {}
    written = []
    for (partition,), rows in linked.links.partition_by("partition", as_dict=True).items():
        kept = same_state and previous.fingerprints.get(partition) == fingerprints[partition]
        if kept and (partition,) in before and before[(partition,)].equals(rows):
            continue
        arrow = rows.to_arrow().replace_schema_metadata(
            {STATE_KEY: _stamp(version, fingerprints[partition], lsh)}
        )
        write_parquet_atomic(
            arrow, partition_path(lake_root, "curation", links_table(config), partition)
        )
        written.append(str(partition))
    present = set(linked.links.get_column("partition").unique().to_list())
    if folder.exists():
        for path in folder.iterdir():
            day = path.name.removesuffix(".parquet")
            if (
                path.name.endswith(".parquet")
                and not path.name.startswith(".")
                and day not in present
            ):
                path.unlink()
    listed = pl.DataFrame(
        [(day, fingerprints[day]) for day in sorted(present)], schema=MANIFEST_SCHEMA, orient="row"
    )
    manifest = pa.Table.from_arrays(
        [listed.get_column(name).to_arrow() for name in MANIFEST_SCHEMA],
        names=list(MANIFEST_SCHEMA),
    ).replace_schema_metadata({STATE_KEY: _stamp(version, "", lsh)})
    write_parquet_atomic(manifest, global_path(lake_root, "curation", links_table(config)))
    return sorted(written)
