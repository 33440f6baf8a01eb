"""Bronze identity check: the bench partitions' bronze and quarantine, as sha256 of each file.

A change to how a parse statement is written (e.g. generating it from the contract) must leave
every published byte alone. This writes, for each source, its bench partition
(`bench.ingest.dataset`: the source's sample generator, ~5% bad lines of every quarantine kind)
through the source's bronze step (`bench.ingest.parse_inputs`, as the assets bind it) and prints,
as JSON, the rows and the sha256 of the bronze and quarantine Parquet files. Run it in two
checkouts (the code imported is the one on `PYTHONPATH`, or this checkout's) with the same
`--data` folder, then compare:

    PYTHONPATH=/path/to/base python bench/bronze_identity.py --data /tmp/d --out base.json
    python bench/bronze_identity.py --data /tmp/d --out new.json
    python bench/bronze_identity.py --compare base.json new.json

`telemetry-breaches` is a partition of every payload breach the telemetry contract test makes.
Both checkouts must use the same pyarrow (the writer version is in the Parquet footer).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stable(case: tuple[str, tuple[str, ...], object]) -> str:
    """A case as text that does not depend on the process (`DROP` is a bare object)."""
    from tests.unit.telemetry import test_payload_validation as cases

    event_type, path, value = case
    return json.dumps([event_type, path, "DROP" if value is cases.DROP else value])


def _breaches() -> Path:
    """Write a telemetry partition of every payload breach the contract test makes; its root.

    One line per case of `tests/unit/telemetry/test_payload_validation.py` (each payload field
    of each event type set to every kind of JSON value, and the special cases), so the payload
    checks, which the bench partition hardly reaches, are compared too.
    """
    from bench import ingest
    from tests.unit.telemetry import test_payload_validation as cases

    root = ingest.DATA / "telemetry-breaches"
    folder = root / "telemetry" / ingest.DAY
    folder.mkdir(parents=True, exist_ok=True)
    # ids and order from the cases themselves (not from the order of the models' fields)
    lines = sorted(
        json.dumps(
            cases.envelope(
                event_id=hashlib.sha256(_stable(case).encode()).hexdigest()[:12],
                event_type=case[0],
                payload=cases._set(cases.VALID_PAYLOADS[case[0]], case[1], case[2]),
            )
        )
        for case in cases.MUTATIONS + cases.SPECIAL
    )
    (folder / "breaches.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def digest(source: str, size_mb: int) -> dict[str, object]:
    """Ingest the bench partition of `source`; return its rows and files' sha256."""
    from bench import ingest

    if source == "telemetry-breaches":
        root, source = _breaches(), "telemetry"
    else:
        root = ingest.dataset(source, size_mb)
    files = ingest.jsonl_files(root, source)
    with tempfile.TemporaryDirectory() as tmp:
        result = ingest.bronze(source, files, root, Path(tmp))
        return {
            "bronze_rows": result.bronze_rows,
            "quarantine_by_reason": dict(sorted(result.quarantine_by_reason.items())),
            "bronze_sha256": _sha256(result.bronze.path),
            "quarantine_sha256": _sha256(result.quarantine.path),
        }


def main(argv: list[str] | None = None) -> int:
    """Write the digests of `--sources` (`--out`), or `--compare` two such files."""
    parser = argparse.ArgumentParser(prog="bench/bronze_identity.py", description=__doc__)
    parser.add_argument("--data", help="folder of the bench partitions (shared by both runs)")
    parser.add_argument("--size-mb", type=int, default=40)
    parser.add_argument(
        "--sources",
        nargs="+",
        default=["escalations", "revisions", "telemetry", "telemetry-breaches", "traces"],
    )
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (json.loads(Path(p).read_text()) for p in args.compare)
        differ = sorted(s for s in set(old) | set(new) if old.get(s) != new.get(s))
        for source in sorted(set(old) & set(new)):
            print(f"{source}: {'DIFFERENT' if source in differ else 'identical'}")
        return 1 if differ else 0
    from bench import ingest

    if args.data:
        ingest.DATA = Path(args.data)
    result = {source: digest(source, args.size_mb) for source in args.sources}
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
