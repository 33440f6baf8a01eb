"""Deterministic raw escalation logs for samples, tests and benchmarks.

The lines follow docs/sources/escalations.md#raw-contract. One day is two files as two SAM nodes
would write them: `escalations-node1.jsonl` (about 60% of the lines, ending in a torn line as if the
writer died mid-record) and `escalations-node2.jsonl.gz` (a rotated, gzipped log). Good records come
from `scenarios.SCENARIOS` at times spread over the day, in sessions of one to a few queries, with
`created_at`, an ISO `timestamp` or both, a producer `id` or none, sometimes pre-labelled, and extra
producer fields (`sam_model`, `escalation_reason`). One good record per day carries invalid UTF-8 in
`sam_reasoning` (kept and flagged at ingest) and the first file holds one blank line (not a record).

Bad records: at least one of every quarantine reason per day (`BAD_KINDS`, plus the torn last
line), otherwise `BAD_SHARE` of the lines. `GeneratedDay.bad_records` counts them by the exact
quarantine reason the ingest gives them. The same seed, day and scale write byte-identical files.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from distill_assets.samples import GeneratedDay
from distill_assets.samples.escalations.scenarios import SCENARIOS

SOURCE = "escalations"
RECORDS_PER_SCALE = 100
BAD_SHARE = 0.05
PLAIN_FILE = "escalations-node1.jsonl"
GZIP_FILE = "escalations-node2.jsonl.gz"
PLAIN_SHARE = 0.6
SECONDS_PER_DAY = 86_400
SAM_MODELS = ("sam-7b-q4", "sam-7b-q8", "sam-13b-q4")
ESCALATION_REASONS = ("low_confidence", "user_requested", "tool_failure", "policy")
TZ_OFFSETS_HOURS = (0, 1, -5, 9)
# Optional text fields that a buggy producer writes with the wrong JSON type.
TEXT_FIELDS = (
    "session_id",
    "query_context",
    "sam_attempt",
    "sam_reasoning",
    "subdomain",
    "task_type",
)
BAD_KINDS: tuple[str, ...] = (
    "invalid_json",
    "not_an_object",
    "missing_query",
    "invalid_query",
    "missing_claude_response",
    "invalid_claude_response",
    "missing_timestamp",
    "invalid_timestamp",
    "invalid_sam_confidence",
    "invalid_id",
    "invalid_text_field",
    "invalid_domain",
    "invalid_complexity",
    "invalid_reasoning_type",
    "duplicate_id",
)


def _producer_id(seed: int, day: str, index: int) -> str:
    return hashlib.sha256(f"esc:{seed}:{day}:{index}".encode()).hexdigest()[:16]


def _iso(moment: float, offset_hours: int) -> str:
    local = datetime.fromtimestamp(moment, tz=timezone(timedelta(hours=offset_hours)))
    text = local.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _dump(record: Any) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8")


# Each spoiler breaks a valid record in place, the way a buggy producer would; it returns the
# quarantine reason when that is not the kind's own name.
def _missing_query(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["query"] = ""
    return None


def _invalid_query(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["query"] = {"text": record["query"], "lang": "en"}
    return None


def _missing_response(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["claude_response"] = None
    record["error"] = "overloaded_error"
    return None


def _invalid_response(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["claude_response"] = [{"type": "text", "text": record["claude_response"]}]
    return None


def _missing_time(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record.pop("created_at", None)
    record.pop("timestamp", None)
    return None


def _invalid_time(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record.pop("timestamp", None)
    if rng.random() < 0.5:
        record["created_at"] = int(moment * 1000)
    else:
        record.pop("created_at", None)
        record["timestamp"] = datetime.fromtimestamp(moment, tz=UTC).strftime("%d/%m/%Y %H:%M:%S")
    return None


def _invalid_confidence(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["sam_confidence"] = rng.choice((40, 85, "high"))
    return None


def _invalid_id(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["id"] = rng.randint(10_000, 99_999)
    return None


def _invalid_text_field(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    field = rng.choice(TEXT_FIELDS)
    record[field] = {"session_id": 4242}.get(field, [record["query"][:40]])
    return f"invalid_{field}"


def _invalid_domain(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["domain"] = rng.choice(("coding", "math", "general"))
    return None


def _invalid_complexity(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["complexity"] = rng.choice((0, 11, 7.5))
    return None


def _invalid_reasoning(record: dict[str, Any], rng: random.Random, moment: float) -> str | None:
    record["reasoning_type"] = rng.choice(("cot", "tool", "Direct"))
    return None


_SPOILERS: dict[str, Callable[[dict[str, Any], random.Random, float], str | None]] = {
    "missing_query": _missing_query,
    "invalid_query": _invalid_query,
    "missing_claude_response": _missing_response,
    "invalid_claude_response": _invalid_response,
    "missing_timestamp": _missing_time,
    "invalid_timestamp": _invalid_time,
    "invalid_sam_confidence": _invalid_confidence,
    "invalid_id": _invalid_id,
    "invalid_text_field": _invalid_text_field,
    "invalid_domain": _invalid_domain,
    "invalid_complexity": _invalid_complexity,
    "invalid_reasoning_type": _invalid_reasoning,
}


class _DayWriter:
    """Builds one day's records from a seeded RNG."""

    def __init__(self, day: str, seed: int) -> None:
        self.day = day
        self.seed = seed
        self.rng = random.Random(f"{seed}:{day}")
        self.day_start = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
        self.session = ""
        self.made = 0

    def record(self, moment: float) -> dict[str, Any]:
        """Return a valid escalation record at `moment` (unix seconds)."""
        rng = self.rng
        self.made += 1
        if not self.session or rng.random() < 0.45:
            clock = datetime.fromtimestamp(moment, tz=UTC).strftime("%Y%m%d_%H%M%S")
            self.session = f"sess_{clock}"
        fields = SCENARIOS[rng.randrange(len(SCENARIOS))](rng)
        labels = fields.pop("labels", {})
        record: dict[str, Any] = {}
        if rng.random() < 0.5:
            record["id"] = _producer_id(self.seed, self.day, self.made)
        record["session_id"] = self.session
        style = rng.random()
        if style < 0.9:
            record["created_at"] = moment
        if style >= 0.6:
            record["timestamp"] = _iso(moment, rng.choice(TZ_OFFSETS_HOURS))
        record["query"] = fields["query"]
        if "query_context" in fields:
            record["query_context"] = fields["query_context"]
        record["sam_attempt"] = fields.get("sam_attempt")
        record["sam_confidence"] = fields.get("sam_confidence")
        record["sam_reasoning"] = fields.get("sam_reasoning")
        record["claude_response"] = fields["claude_response"]
        if labels and rng.random() < 0.3:
            record.update(labels)
        record["sam_model"] = rng.choice(SAM_MODELS)
        record["escalation_reason"] = rng.choice(ESCALATION_REASONS)
        return record

    def bad(self, kind: str, moment: float, earlier: list[bytes]) -> tuple[str, bytes]:
        """Return (quarantine reason, line) for one bad record of `kind`."""
        rng = self.rng
        if kind == "duplicate_id":
            return kind, rng.choice(earlier)
        if kind == "invalid_json":
            clock = _iso(moment, 0)
            return kind, f"{clock} WARN escalation_handler: upstream timeout, retrying".encode()
        record = self.record(moment)
        if kind == "not_an_object":
            return kind, _dump([record["query"], record["claude_response"]])
        reason = _SPOILERS[kind](record, rng, moment)
        return reason or kind, _dump(record)

    def torn(self, moment: float) -> bytes:
        """Return the first half of a record, as a writer killed mid-line leaves it."""
        line = _dump(self.record(moment))
        return line[: len(line) // 2]


def generate_day(out_dir: Path | str, day: str, scale: int = 1, seed: int = 0) -> GeneratedDay:
    """Write `<out_dir>/escalations/<day>/` (two log files) and report what was written."""
    writer = _DayWriter(day, seed)
    rng = writer.rng
    total = RECORDS_PER_SCALE * scale
    bad_count = max(len(BAD_KINDS) + 1, round(total * BAD_SHARE))
    good_count = total - bad_count
    slot = (SECONDS_PER_DAY - 60) / (good_count + bad_count)
    times = [round(writer.day_start + (i + rng.random() * 0.9) * slot, 3) for i in range(total)]
    bad_after = sorted(rng.sample(range(1, good_count), bad_count - 1))
    utf8_broken = rng.randrange(good_count)

    lines: list[bytes] = []
    good_lines: list[bytes] = []
    reasons: Counter[str] = Counter()
    kinds = iter(BAD_KINDS[i % len(BAD_KINDS)] for i in range(bad_count - 1))
    position = 0
    for index in range(good_count):
        record = writer.record(times[len(lines)])
        if index == utf8_broken:
            record["sam_reasoning"] = "decoded from a latin-1 log: caf\udce9"
        line = json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogateescape")
        lines.append(line)
        good_lines.append(line)
        while position < len(bad_after) and bad_after[position] == index + 1:
            reason, bad_line = writer.bad(next(kinds), times[len(lines)], good_lines)
            lines.append(bad_line)
            reasons[reason] += 1
            position += 1

    cut = round(len(lines) * PLAIN_SHARE)
    plain, rotated = lines[:cut], lines[cut:]
    plain.insert(rng.randrange(1, len(plain)), b"")
    plain.append(writer.torn(times[-1]))
    reasons["torn_last_line"] += 1

    folder = Path(out_dir) / SOURCE / day
    folder.mkdir(parents=True, exist_ok=True)
    plain_path, gzip_path = folder / PLAIN_FILE, folder / GZIP_FILE
    plain_path.write_bytes(b"\n".join(plain) + b"\n")
    gzip_path.write_bytes(gzip.compress(b"\n".join(rotated) + b"\n", mtime=0))
    return GeneratedDay(
        source=SOURCE,
        day=day,
        files=[plain_path, gzip_path],
        records=len(lines) + 1,
        bad_records=dict(sorted(reasons.items())),
    )
