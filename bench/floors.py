"""What the validated paths cannot go below with DuckDB and Polars, against a bare DuckDB COPY.

Issues 17 (bronze within 1.5 times COPY) and 9 (escalations' whole path within 2 times COPY),
decomposed on the escalations partition of the ingest benchmark (`bench.ingest.dataset`, 250 MB;
`--quick` 2 MB; its `.jsonl` files), all in one process, best of two by CPU:

- `copy`: `COPY (SELECT * FROM read_json(files, format='newline_delimited', ignore_errors=true))
  TO '…parquet'`;
- `read_json`: the same read alone (one parse per line, straight into typed vectors);
- `reader`: the raw line reader alone (`lib.rawfiles.RawLineReader.chunks`);
- `minimal parse`: what any validating parse in DuckDB must compute per line — `json_valid`,
  `json_transform` of the contract fields to their JSON texts, `json_keys` (unknown fields) —
  with no check, reason or output column, over the reader's chunks;
- `bronze`: the whole bronze step (`defs.ingest.ingest_partition`);
- `seed rule checks`: only testing each answer of that bronze against the escalation pattern lists
  and rules the examples apply to it (`RULE_PATTERN_LISTS` of `rules.escalations`: one Polars
  `str.contains` each), no extraction, scoring or writing.

`python -m bench.floors [MB]` prints the table; `python -m bench --only floors` also writes it to
`bench/results/`.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.first_product import clock
from bench.ingest import dataset, jsonl_files, parse_inputs

SOURCE = "escalations"
FULL_SIZE_MB = 250
QUICK_SIZE_MB = 2
REPEATS = 2
# the seed's pattern lists the examples test every answer against (rules.escalations)
RULE_PATTERN_LISTS = (
    "COT_INDICATORS",
    "TOOL_INDICATORS",
    "CORRECTION_INDICATORS",
    "UNCERTAINTY_INDICATORS",
    "REFLECTION_INDICATORS",
    "REFUSAL_INDICATORS",
    "OUTDATED_INDICATORS",
    "HALLUCINATION_INDICATORS",
    "ERROR_PAGE_INDICATORS",
)
MINIMAL_PARSE = (
    "SELECT CASE WHEN ok THEN json_transform(line, $structure) END AS fields, "
    "CASE WHEN ok THEN json_keys(line) END AS keys "
    "FROM (SELECT *, json_valid(line) AND starts_object(line) AS ok FROM raw_lines)"
)


def _best(work: Callable[[], object]) -> tuple[float, float]:
    """Return the (wall, CPU) seconds of the run of `work` with the least CPU."""
    runs = []
    for _ in range(REPEATS):
        wall0, cpu0 = clock()
        work()
        wall1, cpu1 = clock()
        runs.append((wall1 - wall0, cpu1 - cpu0))
    return min(runs, key=lambda run: run[1])


def measure(size_mb: int) -> dict[str, tuple[float, float]]:
    """Measure every row of the table on the escalations partition of `size_mb`."""
    import duckdb
    import polars as pl

    from distill_assets.contracts.escalations import Interaction
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.lib.lake import ROW_GROUP_SIZE
    from distill_assets.lib.rawfiles import RawLineReader
    from distill_assets.lib.sql import connect, json_fields_structure

    root = dataset(SOURCE, size_mb)
    files = jsonl_files(root, SOURCE)
    contract, params = parse_inputs(SOURCE)
    structure = json_fields_structure(list(Interaction.model_fields))
    chunks = []
    results: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        copy = duckdb.connect()
        scan = f"read_json({files!r}, format='newline_delimited', ignore_errors=true)"
        target = Path(tmp) / "copy.parquet"
        results["copy"] = _best(
            lambda: copy.execute(f"COPY (SELECT * FROM {scan}) TO '{target}' (FORMAT parquet)")
        )
        results["read_json"] = _best(
            lambda: copy.execute(f"SELECT count(*) FROM (SELECT * FROM {scan})").fetchall()
        )
        copy.close()

    def read() -> None:
        reader = RawLineReader(files, root=str(root))
        chunks[:] = list(reader.chunks(contract.chunk_bytes, ROW_GROUP_SIZE))

    results["reader"] = _best(read)
    con = connect(private=True)

    def parse() -> None:
        for chunk in chunks:
            con.register("raw_lines", chunk)
            con.sql(MINIMAL_PARSE, params={"structure": structure}).to_arrow_table()
            con.unregister("raw_lines")

    results["minimal parse"] = _best(parse)
    con.close()
    staged: list[Path] = []

    def bronze() -> None:
        result = ingest_partition(
            contract, files, raw_root=str(root), params=params, bronze_exclude=("line",)
        )
        staged.append(result.bronze.path)

    results["bronze"] = _best(bronze)
    answers = pl.read_parquet(staged[-1], columns=["claude_response"])
    for path in staged:
        shutil.rmtree(path.parent, ignore_errors=True)
    checks = [
        pl.col("claude_response").str.contains(pattern).alias(f"rule_{number}")
        for number, pattern in enumerate(rule_patterns())
    ]
    results["seed rule checks"] = _best(lambda: answers.select(checks))
    return results


def rule_patterns() -> list[str]:
    """Return every escalation pattern the examples test each answer against."""
    from distill_assets.rules import escalations as rules

    patterns = [p for name in RULE_PATTERN_LISTS for p in getattr(rules, name)]
    patterns += [pattern for _, pattern in rules.SAM_ERROR_RULES]
    patterns += [pattern for _, pattern in rules.ANSWER_ROLE_CUES]
    patterns += [answer for _, answer, _ in rules.IMPROVEMENT_RULES]
    return patterns + [pattern for _, pattern in rules.SUBDOMAIN_RULES]


def run(quick: bool = False, size_mb: int | None = None) -> str:
    """Run the benchmark and return its Markdown section."""
    size = size_mb or (QUICK_SIZE_MB if quick else FULL_SIZE_MB)
    results = measure(size)
    copy_cpu = results["copy"][1]
    lines = [
        f"### Floors: escalations, {size} MB partition (`.jsonl` files)",
        "",
        "| what | wall s | CPU s | × COPY CPU |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {name} | {wall:.2f} | {cpu:.2f} | {cpu / copy_cpu:.2f} |"
        for name, (wall, cpu) in results.items()
    ]
    return "\n".join(lines)


def main() -> None:
    """`python -m bench.floors [MB]`: print the table for one size."""
    parser = argparse.ArgumentParser(prog="python -m bench.floors")
    parser.add_argument("size_mb", nargs="?", type=int, default=None)
    print(run(size_mb=parser.parse_args().size_mb))


if __name__ == "__main__":
    main()
