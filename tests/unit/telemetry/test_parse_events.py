"""The telemetry parse SQL through the shared ingest: reasons, details, pseudonyms, redaction."""

import json
from pathlib import Path

import polars as pl
import pytest

from distill_assets.contracts import telemetry
from distill_assets.defs.ingest import ingest_partition
from distill_assets.defs.player_ids import PlayerIdHasher, player_key
from distill_assets.defs.telemetry.assets import parse_params

KEY = "unit-test-key"
PID = "p_7f3a9c21d4"
DAY = "2026-11-19"
T0 = 1795082400.0  # 2026-11-19T10:00:00Z

BRONZE_COLUMNS = [
    "source_file",
    "line_no",
    "utf8_replaced",
    "event_id",
    "event_type",
    "schema_version",
    "player_key",
    "session_id",
    "client_ts",
    "server_ts",
    "payload",
    "extra",
]


def envelope(**changes: object) -> dict:
    event: dict = {
        "event_id": "e1",
        "event_type": "dialogue_turn",
        "schema_version": "1.4",
        "player_id": PID,
        "session_id": "s1",
        "client_ts": T0 - 0.5,
        "server_ts": T0,
        "payload": {"conversation_id": "c1", "turn_index": 0, "speaker": "player", "text": "Hi"},
    }
    for name, value in changes.items():
        if value is DROP:
            event.pop(name)
        else:
            event[name] = value
    return event


def with_payload(**changes: object) -> dict:
    payload = dict(envelope()["payload"])
    for name, value in changes.items():
        if value is DROP:
            payload.pop(name)
        else:
            payload[name] = value
    return envelope(payload=payload)


DROP = object()


def ingest(
    tmp_path: Path, lines: list[str], key: str = KEY, trailing_newline: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame]:
    raw_root = tmp_path / "raw"
    path = raw_root / "telemetry" / DAY / "a.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
    params, _ = parse_params(PlayerIdHasher(key=key))
    result = ingest_partition(
        telemetry.RAW,
        [str(path)],
        raw_root=str(raw_root),
        params=params,
        bronze_exclude=("line",),
    )
    return pl.read_parquet(result.bronze.path), pl.read_parquet(result.quarantine.path)


GOOD = json.dumps(envelope(event_id="good"))

BAD_CASES: list[tuple[str, str, str | None]] = [
    ('{"event_id": "e1", "player_id": "p_7f3a9c21d4", oops}', "invalid_json", None),
    ("[1, 2]", "not_an_object", "top-level JSON array"),
    ('"heartbeat"', "not_an_object", "top-level JSON varchar"),
    (GOOD[:-1] + ', "event_type": "consent"}', "duplicate_key", "repeated key: event_type"),
    (
        json.dumps(with_payload(text="hi"))[:-2] + ', "text": "bye"}}',
        "duplicate_key",
        "repeated key: text",
    ),
    (json.dumps(envelope(event_id=DROP)), "missing_event_id", None),
    (json.dumps(envelope(event_id="  ")), "missing_event_id", None),
    (json.dumps(envelope(event_id=7)), "invalid_event_id", "event_id is ubigint"),
    (json.dumps(envelope(event_type=DROP)), "missing_event_type", None),
    (json.dumps(envelope(event_type="emote")), "unknown_event_type", "event_type: emote"),
    (json.dumps(envelope(event_type=3)), "unknown_event_type", "event_type: 3"),
    (json.dumps(envelope(player_id=DROP)), "missing_player_id", None),
    (json.dumps(envelope(player_id=None)), "missing_player_id", None),
    (json.dumps(envelope(player_id="")), "missing_player_id", None),
    (json.dumps(envelope(player_id=5530918274)), "invalid_player_id", "player_id is ubigint"),
    (json.dumps(envelope(server_ts=DROP)), "missing_server_ts", None),
    (json.dumps(envelope(server_ts="yesterday")), "invalid_timestamp", "server_ts: yesterday"),
    (json.dumps(envelope(server_ts=12)), "invalid_timestamp", "server_ts: 12"),
    (
        json.dumps(envelope(client_ts="2026-13-45T99:00:00Z")),
        "invalid_timestamp",
        "client_ts: 2026-13-45T99:00:00Z",
    ),
    (json.dumps(envelope(payload=DROP)), "missing_payload", None),
    (json.dumps(envelope(payload=None)), "missing_payload", None),
    (json.dumps(envelope(payload="reward pending")), "invalid_payload", "payload is varchar"),
    (json.dumps(envelope(payload=[1])), "invalid_payload", "payload is array"),
    (
        json.dumps(with_payload(conversation_id=DROP)),
        "missing_conversation_id",
        "conversation_id is null",
    ),
    (
        json.dumps(with_payload(conversation_id=" ")),
        "missing_conversation_id",
        "conversation_id is blank",
    ),
    (json.dumps(with_payload(speaker=None)), "missing_speaker", "speaker is null"),
    (json.dumps(with_payload(speaker="narrator")), "invalid_speaker", "speaker: narrator"),
    (json.dumps(with_payload(text="")), "missing_text", "text is blank"),
    (json.dumps(with_payload(text=["Hi"])), "missing_text", "text is array"),
    (json.dumps(with_payload(turn_index=DROP)), "missing_turn_index", None),
    (json.dumps(with_payload(turn_index=-1)), "invalid_turn_index", "turn_index: -1"),
    (json.dumps(with_payload(turn_index=2.5)), "invalid_turn_index", "turn_index: 2.5"),
    (json.dumps(with_payload(turn_index="3")), "invalid_turn_index", "turn_index: 3"),
]


@pytest.mark.parametrize(("line", "reason", "detail"), BAD_CASES)
def test_each_bad_kind_is_quarantined_with_its_reason(
    tmp_path: Path, line: str, reason: str, detail: str | None
) -> None:
    bronze, quarantine = ingest(tmp_path, [line, GOOD])
    assert bronze.get_column("event_id").to_list() == ["good"]
    assert quarantine.select("source", "source_file", "line_no", "reason", "detail").rows() == [
        ("telemetry", f"telemetry/{DAY}/a.jsonl", 1, reason, detail)
    ]


def test_a_repeated_player_id_leaves_no_raw_id_in_quarantine(tmp_path: Path) -> None:
    first, second = "p_first_0001", "p_second_0002"
    line = json.dumps(envelope(event_id="dup", player_id=first))[:-1]
    _, quarantine = ingest(tmp_path, [line + f', "player_id": "{second}"}}', GOOD])
    assert quarantine.select("reason", "detail").rows() == [
        ("duplicate_key", "repeated key: player_id")
    ]
    raw_line = quarantine.item(0, "raw_line")
    assert first not in raw_line and second not in raw_line
    assert raw_line.count(player_key(KEY.encode(), first)) == 2


def test_torn_last_line_and_its_player_id_is_redacted(tmp_path: Path) -> None:
    full = json.dumps(envelope(event_id="e9"))
    torn = full[: full.index(PID) + 5]  # cut inside the id
    _, quarantine = ingest(tmp_path, [GOOD, torn], trailing_newline=False)
    assert quarantine.select("line_no", "reason").rows() == [(2, "torn_last_line")]
    partial_key = player_key(KEY.encode(), PID[:5])
    assert quarantine.item(0, "raw_line") == torn.replace(PID[:5], partial_key)


def test_bronze_columns_pseudonym_and_no_raw_line(tmp_path: Path) -> None:
    bronze, _ = ingest(tmp_path, [GOOD])
    assert bronze.columns == BRONZE_COLUMNS
    assert bronze.row(0, named=True) == {
        "source_file": f"telemetry/{DAY}/a.jsonl",
        "line_no": 1,
        "utf8_replaced": False,
        "event_id": "good",
        "event_type": "dialogue_turn",
        "schema_version": "1.4",
        "player_key": player_key(KEY.encode(), PID),
        "session_id": "s1",
        "client_ts": T0 - 0.5,
        "server_ts": T0,
        "payload": '{"conversation_id":"c1","turn_index":0,"speaker":"player","text":"Hi"}',
        "extra": None,
    }


@pytest.mark.parametrize(
    ("key", "pid"),
    [
        ("k", "p_1"),
        ("a key longer than one SHA-256 block of sixty-four bytes, so it is hashed first", "p_1"),
        ("clé secrète", "joueur-ünïcødé-𒀭"),
    ],
)
def test_sql_hmac_equals_python_hmac(tmp_path: Path, key: str, pid: str) -> None:
    bronze, _ = ingest(tmp_path, [json.dumps(envelope(player_id=pid), ensure_ascii=False)], key)
    assert bronze.item(0, "player_key") == player_key(key.encode(), pid)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-19T10:00:00Z", T0),
        ("2026-11-19T12:00:00+02:00", T0),
        ("2026-11-19T10:00:00.250", T0 + 0.25),
        ("2026-11-19 10:00:00", T0),
        (1795082400, T0),
    ],
)
def test_timestamps_are_unix_seconds_utc(tmp_path: Path, value: object, expected: float) -> None:
    bronze, quarantine = ingest(tmp_path, [json.dumps(envelope(server_ts=value, client_ts=value))])
    assert quarantine.height == 0
    assert bronze.select("client_ts", "server_ts").row(0) == (expected, expected)


def test_unknown_fields_go_to_extra(tmp_path: Path) -> None:
    event = envelope(client={"platform": "web", "build": "0.9.14"}, region="eu")
    bronze, _ = ingest(tmp_path, [json.dumps(event)])
    assert json.loads(bronze.item(0, "extra")) == {
        "client": {"platform": "web", "build": "0.9.14"},
        "region": "eu",
    }


def test_raw_player_id_is_replaced_in_every_kept_field(tmp_path: Path) -> None:
    event = envelope(
        event_id=f"{PID}-000001",
        session_id=f"sess-{PID}",
        debug_player=PID,
        payload={
            "conversation_id": "c1",
            "turn_index": 0,
            "speaker": "player",
            "text": f"I am {PID}, trust me",
            "player_id": PID,
        },
    )
    bronze, _ = ingest(tmp_path, [json.dumps(event)])
    key = player_key(KEY.encode(), PID)
    row = bronze.row(0, named=True)
    assert PID not in json.dumps(row)
    assert row["event_id"] == f"{key}-000001"
    assert row["session_id"] == f"sess-{key}"
    assert json.loads(row["extra"]) == {"debug_player": key}
    assert json.loads(row["payload"])["player_id"] == key
    assert json.loads(row["payload"])["text"] == f"I am {key}, trust me"


def test_quarantined_raw_lines_have_the_player_id_replaced(tmp_path: Path) -> None:
    key = player_key(KEY.encode(), PID)
    lines = [
        json.dumps(envelope(payload=DROP)),
        '{"event_id": "e2", "player_id": "p_7f3a9c21d4", oops}',
        json.dumps(envelope(player_id=5530918274)),
    ]
    _, quarantine = ingest(tmp_path, lines)
    raw = quarantine.get_column("raw_line").to_list()
    assert raw[0] == json.dumps(envelope(payload=DROP, player_id=key))
    assert raw[1] == '{"event_id": "e2", "player_id": "' + key + '", oops}'
    numeric_key = player_key(KEY.encode(), "5530918274")
    assert '"player_id": ' + numeric_key + "," in raw[2]
    assert "5530918274" not in raw[2]


def test_an_id_that_cannot_be_replaced_without_breaking_json_is_quarantined(
    tmp_path: Path,
) -> None:
    event = envelope(
        player_id="4417093265",
        event_type="consent",
        payload={"granted": True, "scopes": ["sft"], "account_number": 4417093265},
    )
    in_extra = envelope(event_id="e2", player_id="4417093265", legacy_account=4417093265)
    bronze, quarantine = ingest(tmp_path, [json.dumps(event), json.dumps(in_extra)])
    assert bronze.height == 0
    assert quarantine.select("reason", "detail").rows() == [
        ("unredactable_player_id", None),
        ("unredactable_player_id", None),
    ]
    assert not any("4417093265" in line for line in quarantine.get_column("raw_line"))


def test_a_repeated_valid_record_is_quarantined_redacted(tmp_path: Path) -> None:
    quoted = 'p_"7f\\3a'
    mentioned = with_payload(text=f"I am {PID}, say hi")
    first = json.dumps({**mentioned, "referrer": f"friend of {PID}"})
    odd = json.dumps(envelope(event_id="e2", player_id=quoted, session_id=f"s-{quoted}"))
    bronze, quarantine = ingest(tmp_path, [first, odd, first, odd, GOOD])
    assert bronze.get_column("line_no").to_list() == [1, 2, 5]
    assert quarantine.select("line_no", "reason").rows() == [
        (3, "duplicate_event_id"),
        (4, "duplicate_event_id"),
    ]
    key, quoted_key = player_key(KEY.encode(), PID), player_key(KEY.encode(), quoted)
    assert quarantine.get_column("raw_line").to_list() == [
        first.replace(PID, key),
        odd.replace(json.dumps(quoted)[1:-1], quoted_key),
    ]


def test_duplicate_event_id_keeps_the_first_valid_record(tmp_path: Path) -> None:
    invalid_first = json.dumps(envelope(event_id="dup", server_ts="never"))
    first = json.dumps(envelope(event_id="dup"))
    again = json.dumps(envelope(event_id="dup", server_ts=T0 + 5))
    bronze, quarantine = ingest(tmp_path, [invalid_first, first, GOOD, again, first])
    assert bronze.select("event_id", "line_no").rows() == [("dup", 2), ("good", 3)]
    assert quarantine.select("line_no", "reason", "detail").rows() == [
        (1, "invalid_timestamp", "server_ts: never"),
        (4, "duplicate_event_id", f"first kept at telemetry/{DAY}/a.jsonl:2"),
        (5, "duplicate_event_id", f"first kept at telemetry/{DAY}/a.jsonl:2"),
    ]
