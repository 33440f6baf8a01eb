"""Raw escalation JSONL → bronze `records` + `quarantine` through the shared streaming ingest."""

from distill_assets.contracts.escalations import RAW
from distill_assets.defs.ingest import IngestResult, ingest_partition

SOURCE = "escalations"
RECORDS = "records"
# the raw line stays out of bronze (quarantine keeps it)
RECORDS_EXCLUDE = ("line",)


def ingest_records(raw_paths: list[str], raw_root: str | None = None) -> IngestResult:
    """Parse raw escalation files with the contract's parse (`contracts.escalations.RAW`).

    The statement is generated from `contracts.escalations.Interaction`; the raw line is kept only
    in quarantine (bronze holds every parsed field plus `extra`).
    """
    return ingest_partition(
        RAW,
        raw_paths,
        raw_root=raw_root,
        bronze_exclude=RECORDS_EXCLUDE,
    )
