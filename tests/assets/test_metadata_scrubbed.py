"""Nothing unscrubbed reaches the Dagster instance: previews pass through the scrubber."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from distill_assets.lib.settings import Settings
from tests.conftest import land

DAY = "2026-11-19"
EMAIL = "planted.person@mailhost.example.net"
CARD = "4539 1488 0343 6467"
# what must not be stored: the values and the start of the card number
NEEDLES = (EMAIL, "planted.person", CARD, "4539 1488", "45391488")


def turn(iteration: int, decision: str, response: str) -> str:
    return json.dumps(
        {
            "turn_id": "turn_planted",
            "ts": 1795076043.0 + iteration,
            "iteration": iteration,
            "query": f"mail {EMAIL} card {CARD} please",
            "response": response,
            "decision": decision,
            "revision_hints": [f"do not repeat {EMAIL}"],
            "revision_focus": "privacy",
        }
    )


def stored_bytes(home: Path) -> bytes:
    """Return every file of the instance's storage folder, concatenated."""
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_previews_in_the_instance_storage_hold_no_planted_value(distill_env: Settings) -> None:
    land(
        distill_env,
        "revisions",
        DAY,
        "planted.jsonl",
        "\n".join(
            [
                turn(1, "REVISE", f"card {CARD} mailed to {EMAIL}"),
                turn(2, "APPROVE", f"I cannot repeat {EMAIL} or {CARD}."),
            ]
        )
        + "\n",
    )
    from distill_assets.definitions import defs

    home = Path(dg.DagsterInstance.get().root_directory)
    job = dg.define_asset_job("planted", selection='key:"revisions/*"')
    resolved = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job]))
    with dg.DagsterInstance.get() as instance:
        result = resolved.resolve_job_def("planted").execute_in_process(
            partition_key=DAY, instance=instance, raise_on_error=True
        )
        pairs = next(
            m
            for m in result.asset_materializations_for_node("revision_pairs")
            if m.asset_key.path[-1] == "revision_pairs"
        )
    preview = pairs.metadata["preview"].value
    assert "[REDACTED_EMAIL]" in preview and "[REDACTED_CARD]" in preview
    stored = stored_bytes(home)
    assert b"REDACTED_EMAIL" in stored  # the preview was stored, scrubbed
    assert [n for n in NEEDLES if n.encode() in stored] == []
