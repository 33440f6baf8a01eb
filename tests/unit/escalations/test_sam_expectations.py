"""The expectation kinds of SAM's own distillation tests that distill failed (issue 27).

Each test is built from examples written for it (not SAM's fixtures): complexity of a multi-step
explanation, step typing and extraction for ordered steps in three shapes, the uncertainty flag
for hedges, the correction type of a value/expiry correction, and replies that are not answers
(acknowledgement, "I don't know", a question back) kept out of every export with their reason.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from distill_assets.defs.escalations.exports import FORMATS, export_rows
from tests.unit.escalations.frames import example_frame

FOUR_STEPS = (
    "Let me work through this.\n\n"
    "First, look at the access pattern: thumbnails are read far more often than written.\n\n"
    "Second, measure the working set. It fits in about 2 GB of memory.\n\n"
    "Third, compare the candidates:\n1. LRU - simple and good for recency\n"
    "2. LFU - keeps the popular items\n3. ARC - adapts between the two\n\n"
    "Finally, pick LRU, because the hot thumbnails are also the recent ones and it is the "
    "cheapest to run."
)
PARTS = (
    "Here is the rollout.\n\nPart 1: Prepare the index\n- Build the index offline\n"
    "- Copy it to the new nodes\n\nPart 2: Shift traffic\n- Send 5% of queries to the new "
    "service\n- Compare latency and results\n\nPart 3: Finish\n- Move the rest of the traffic\n"
    "- Turn off the old cluster"
)
ORDINALS = (
    "First, generate the new key pair in the vault. Then publish the new public key next to the "
    "old one. After that, switch the signer to the new private key. Finally, remove the old "
    "public key once every token signed with it has expired."
)
HEADERS = (
    "## Back up\nSnapshot the volume before touching it.\n\n## Resize\nGrow the volume to 200 GB "
    "in the console.\n\n## Extend\nRun `resize2fs` on the device so the filesystem uses the space."
)


def one(**fields: Any) -> dict[str, Any]:
    return example_frame(fields).row(0, named=True)


def test_a_four_step_explanation_is_complex_and_chain_of_thought() -> None:
    row = one(
        query="Which cache eviction policy should my image service use?", claude_response=FOUR_STEPS
    )
    assert row["reasoning_type"] == "chain_of_thought"
    assert len(row["reasoning_steps"]) == 3  # the numbered options win over the ordinals
    # 1 + (4 ordered steps: >= 3 and >= 4) + (a numbered list nested in the ordinal steps)
    assert row["complexity"] == 4


def test_part_headers_are_ordered_steps() -> None:
    row = one(query="How do I roll out the new search service?", claude_response=PARTS)
    assert row["reasoning_type"] == "chain_of_thought"
    assert [s["content"] for s in row["reasoning_steps"]] == [
        "Prepare the index",
        "Shift traffic",
        "Finish",
    ]
    assert row["complexity"] == 3  # 1 + (>= 3 steps) + (bullets nested under the parts)


def test_first_then_finally_sentences_are_ordered_steps() -> None:
    row = one(query="How do I rotate the signing key?", claude_response=ORDINALS)
    assert row["reasoning_type"] == "chain_of_thought"
    assert [(s["step_num"], s["action"], s["content"]) for s in row["reasoning_steps"]] == [
        (1, "explain", "generate the new key pair in the vault"),
        (2, "explain", "publish the new public key next to the old one"),
        (3, "explain", "switch the signer to the new private key"),
        (4, "remove", "remove the old public key once every token signed with it has expired"),
    ]
    assert row["complexity"] == 3  # 1 + (>= 3 and >= 4 steps)


def test_markdown_headers_are_ordered_steps_outside_code() -> None:
    row = one(
        query="How do I grow the disk of my database server?",
        claude_response=HEADERS
        + "\n\n```bash\n# not a header: a shell comment\nresize2fs /dev/sdb\n```",
    )
    assert [s["content"] for s in row["reasoning_steps"]] == ["Back up", "Resize", "Extend"]
    assert row["reasoning_type"] == "tool_use"  # the bash block: the seed's precedence


def test_hedges_raise_the_uncertainty_flag() -> None:
    hedges = (
        "I'm not sure, but I believe the default session lifetime is 24 hours unless the config "
        "overrides it; check `SESSION_TTL` in settings.py.",
        "Not sure, but the session lifetime probably comes from `SESSION_TTL` in settings.py.",
        "I\u2019m not certain: the session lifetime may be set by the reverse proxy instead.",
        "I'm quite unsure here, and this is pure speculation, but the proxy may cut sessions.",
    )
    frame = example_frame(
        *({"claude_response": h} for h in hedges),
        query="What is the default session lifetime in our auth library?",
    )
    assert ["uncertain" in flags for flags in frame.get_column("quality_flags")] == [True] * 4
    assert frame.get_column("answer_rejection").to_list() == [None] * 4  # hedged, still answers


def test_a_ttl_value_correction_is_a_correction_of_type_wrong_value() -> None:
    row = one(
        query="How long should the cache entries live?",
        sam_attempt="Set the TTL to 60 seconds so the cache stays fresh.",
        claude_response="The cache TTL should be 3600 seconds instead of 60: the upstream data "
        "only changes hourly, so a 60-second expiry refreshes sixty times more often than needed.",
    )
    assert row["reasoning_type"] == "correction"  # "instead of" + the value correction
    [error] = row["corrections"]["sam_errors"]
    assert error["error_type"] == "wrong_value"  # was wrong_approach ("instead of")
    assert error["what_sam_said"] == "Set the TTL to 60 seconds so the cache stays fresh."


def test_an_expiry_the_attempt_does_not_handle_is_a_correction() -> None:
    row = one(
        query="How do I implement a cache with expiring entries?",
        sam_attempt="Use a dictionary to store the values.",
        claude_response="Actually, a plain dictionary won't handle TTL expiration: store each "
        "value with its expiry time and drop it on read once `time.time()` is past it.",
    )
    assert row["reasoning_type"] == "correction"
    assert row["corrections"]["sam_errors"][0]["error_type"] == "wrong_value"


def test_replies_that_are_not_answers_leave_every_export_with_their_reason() -> None:
    replies = ("ok thanks", "I don't know", "which bucket are they in?", "no idea tbh")
    frame = example_frame(
        *({"claude_response": r} for r in replies), query="Why are the thumbnails stale?"
    )
    assert frame.get_column("answer_rejection").to_list() == [
        "acknowledgement",
        "dont_know",
        "question_back",
        "dont_know",
    ]
    # "I don't know" scores exactly the minimum: the exclusive gate keeps it out on its own too
    assert frame.get_column("quality_score").to_list()[1] == 0.3
    for name in FORMATS:
        feed, dropped = export_rows(frame, name)
        assert feed.height == 0, name
    _, dropped = export_rows(frame, "instruction")
    assert dropped == {
        "not_an_answer:acknowledgement": 1,
        "not_an_answer:dont_know": 2,
        "not_an_answer:question_back": 1,
    }


def test_an_approval_overturns_an_answer_ness_rejection_but_not_the_quality_minimum() -> None:
    frame = example_frame(
        {
            "claude_response": "please purge the CDN cache for the thumbnails folder, and keep "
            "the originals in the bucket as they are for the moment."
        },
        {"claude_response": "ok thanks"},
        query="Why are the thumbnails stale in the CDN?",
    )
    assert frame.get_column("answer_rejection").to_list() == ["user_request", "acknowledgement"]
    _, dropped = export_rows(frame, "instruction")
    assert dropped == {"not_an_answer:user_request": 1, "not_an_answer:acknowledgement": 1}
    frame = frame.with_columns(pl.lit(1, dtype=pl.Int64).alias("human_reviewed"))
    feed, dropped = export_rows(frame, "instruction")
    assert dropped == {"below_min_quality": 1}
    assert feed.get_column("subject").to_list() == ["e1"]
