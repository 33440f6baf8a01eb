"""Every indicator list, flag and junk rule of `rules/escalations.py`: a positive and a negative.

Pattern cases run through Polars (the engine the assets use); flag cases run whole records
through `distillation_examples`; the junk fixture is a set of captures like those a real assistant
logs (chatter logged as the answer, an answer to another query, a refusal, an error page, an
acknowledgement) next to genuine answers, and none of the junk reaches any export.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from distill_assets.defs.escalations.exports import FORMATS, export_rows
from distill_assets.rules import escalations as rules
from tests.unit.escalations.frames import example_frame

# (list name, index, a text it matches, a text it does not match)
PATTERN_CASES: list[tuple[str, int, str, str]] = [
    ("COT_INDICATORS", 0, "Let me think about it", "let me think about it"),
    ("COT_INDICATORS", 1, "First, open the file", "open the file"),
    ("COT_INDICATORS", 2, "Next, close it", "close it"),
    ("COT_INDICATORS", 3, "After that it works", "it works"),
    ("COT_INDICATORS", 4, "Therefore 9", "hence 9"),
    ("COT_INDICATORS", 5, "Because x is 1 Thus y is 2", "because x is 1"),
    ("COT_INDICATORS", 6, "1. a\n2. b", "1. a"),
    ("TOOL_INDICATORS", 0, "```bash\nls\n```", "```\nls\n```"),
    ("TOOL_INDICATORS", 1, "```python\nimport os", "```python\nprint(1)"),
    ("TOOL_INDICATORS", 2, "Let me run the tests", "the tests ran"),
    ("TOOL_INDICATORS", 3, "Using the tool, we see", "using a hammer"),
    ("TOOL_INDICATORS", 4, "run git status", "a digit number"),
    ("CORRECTION_INDICATORS", 0, "Actually, no", "actually, no"),
    ("CORRECTION_INDICATORS", 1, "The correct value", "a correct value"),
    ("CORRECTION_INDICATORS", 2, "a small mistake", "a mistake"),
    ("CORRECTION_INDICATORS", 3, "you missed it", "you hit it"),
    ("CORRECTION_INDICATORS", 4, "use x instead of y", "use x"),
    ("UNCERTAINTY_INDICATORS", 0, "I'm not sure it works", "I'm sure it works"),
    ("UNCERTAINTY_INDICATORS", 1, "I don't know the version", "I know the version"),
    ("UNCERTAINTY_INDICATORS", 2, "we can't know for sure", "we know for sure"),
    ("UNCERTAINTY_INDICATORS", 3, "I might be wrong", "I am right"),
    ("UNCERTAINTY_INDICATORS", 4, "it is hard to say", "it is easy to say"),
    ("UNCERTAINTY_INDICATORS", 5, "I'm very uncertain about this", "I'm certain about this"),
    ("UNCERTAINTY_INDICATORS", 6, "Not sure, but try 30", "Sure, try 30"),
    ("UNCERTAINTY_INDICATORS", 7, "this is pure speculation", "this is a fact"),
    ("REFLECTION_INDICATORS", 0, "Let me double-check", "Let me check in"),
    ("REFLECTION_INDICATORS", 1, "On second thought", "On the second floor"),
    ("REFLECTION_INDICATORS", 2, "I was wrong", "I was right"),
    ("REFLECTION_INDICATORS", 3, "my earlier answer", "my answer"),
    ("REFUSAL_INDICATORS", 0, "I can't help with that", "I can help with that"),
    ("REFUSAL_INDICATORS", 1, "Sorry, but I cannot", "Sorry, I was late"),
    ("OUTDATED_INDICATORS", 0, "as of 2023 it is", "as far as I know"),
    ("OUTDATED_INDICATORS", 1, "the latest version is 3.2", "use version 3.2"),
    ("OUTDATED_INDICATORS", 2, "this API is deprecated", "this API is stable"),
    ("HALLUCINATION_INDICATORS", 0, "according to a survey", "a survey exists"),
    ("HALLUCINATION_INDICATORS", 1, "it improves speed by 40%", "it improves speed"),
    ("HALLUCINATION_INDICATORS", 2, "since 1998 the law", "since then the law"),
    ("HALLUCINATION_INDICATORS", 3, "it was invented by Bell", "it was invented"),
    ("ERROR_PAGE_INDICATORS", 0, "502 Bad Gateway", "a bad gateway design"),
    ("ERROR_PAGE_INDICATORS", 1, "Rate limit exceeded", "the rate limit is 10"),
    ("ANSWER_ROLE_CUES", 0, "ok now can you fix it", "you can fix it"),
    ("ANSWER_ROLE_CUES", 1, "I want it to remember my theme", "You want it to remember"),
    ("ANSWER_ROLE_CUES", 2, "it crashes when I click save", "a crash dump holds the stack"),
    ("PRINCIPLE_RULES", 0, "Always validate input.", "Validation helps."),
    ("PRINCIPLE_RULES", 1, "When a test fails, read the log", "When done"),
    ("SAM_ERROR_RULES", 0, "The TTL should be 300 seconds", "The TTL is a number"),
    ("SAM_ERROR_RULES", 1, "That is incorrect: it is 9", "That is 9"),
    ("SAM_ERROR_RULES", 2, "A better approach is a set", "A set works"),
    ("SAM_ERROR_RULES", 3, "It depends on your setup", "It is your setup"),
    ("DOMAIN_RULES", 0, "write a haiku", "write a report"),
    ("DOMAIN_RULES", 1, "plan the rollout", "plant a tree"),
    ("DOMAIN_RULES", 2, "a Python traceback", "a long story"),
    ("DOMAIN_RULES", 3, "compare the trade-offs", "describe it"),
    ("DOMAIN_RULES", 4, "how many sheep", "how green"),
    ("SUBDOMAIN_RULES", 0, "in Python", "in Perl"),
    ("SUBDOMAIN_RULES", 1, "TypeScript types", "types"),
    ("SUBDOMAIN_RULES", 2, "a React hook", "a hook"),
    ("SUBDOMAIN_RULES", 3, "a SQLite index", "an index"),
    ("SUBDOMAIN_RULES", 4, "docker compose up", "compost heap"),
    ("SUBDOMAIN_RULES", 5, "git rebase", "digit rebase"),
    ("SUBDOMAIN_RULES", 6, "a bash loop", "a loop"),
    ("SUBDOMAIN_RULES", 7, "the probability of rain", "the chance of rain"),
    ("TASK_TYPE_RULES", 0, "fix this error", "tidy this"),
    ("TASK_TYPE_RULES", 1, "refactor the module", "read the module"),
    ("TASK_TYPE_RULES", 2, "implement a queue", "a queue"),
    ("TASK_TYPE_RULES", 3, "a roadmap for Q3", "a map for Q3"),
    ("TASK_TYPE_RULES", 4, "explain closures", "closures"),
    ("IMPROVEMENT_RULES", 0, "This happens when the cache is cold", "The cache is cold"),
    ("IMPROVEMENT_RULES", 1, "1. open\n2. close", "open, then close"),
    ("IMPROVEMENT_RULES", 2, "there are several ways to do it", "there is a way to do it"),
    ("IMPROVEMENT_RULES", 3, "fix the root cause", "fix the cause"),
    ("IMPROVEMENT_RULES", 4, "```py\nx\n```", "x"),
]
SINGLE_PATTERNS: list[tuple[str, str, str]] = [
    ("ACKNOWLEDGEMENT", "ok, thanks!", "ok, here is the fix"),
    ("ERROR_PAGE_START", "<!DOCTYPE html><html>", "Use <html> tags"),
    ("ROOT_CAUSE_PATTERN", "fix the root cause", "fix the cause"),
    ("INCOMPLETE_ENDING", "and then the", "and that is all."),
    ("DONT_KNOW", "I don't know.", "I know: use a set."),
    ("HEDGE_CONTINUATION", "not sure, but probably 30", "not sure."),
    ("LOG_LINE", '  File "app.py", line 3', "The file is app.py"),
    ("COMMAND_LINE", "$ git push origin main", "Push with git."),
    ("EXPLANATION_MARKERS", "it fails because the lock is held", "it fails"),
    ("GUIDANCE_MARKERS", "you can pass a timeout", "a timeout"),
]


def _pattern(name: str, index: int) -> str:
    entry = getattr(rules, name)[index]
    return entry[1] if isinstance(entry, tuple) else entry


@pytest.mark.parametrize(("name", "index", "positive", "negative"), PATTERN_CASES)
def test_each_indicator_pattern_has_a_positive_and_a_negative(
    name: str, index: int, positive: str, negative: str
) -> None:
    pattern = _pattern(name, index)
    assert pl.Series([positive, negative]).str.contains(pattern).to_list() == [True, False]


def test_every_pattern_of_every_list_has_a_case() -> None:
    for name in {case[0] for case in PATTERN_CASES}:
        covered = {case[1] for case in PATTERN_CASES if case[0] == name}
        assert covered == set(range(len(getattr(rules, name)))), name


@pytest.mark.parametrize(("name", "positive", "negative"), SINGLE_PATTERNS)
def test_each_single_rule_pattern_has_a_positive_and_a_negative(
    name: str, positive: str, negative: str
) -> None:
    pattern = getattr(rules, name)
    assert pl.Series([positive, negative]).str.contains(pattern).to_list() == [True, False]


def examples(*records: dict[str, Any]) -> pl.DataFrame:
    return example_frame(*records, query="How should I handle retries in the payment client?")


LONG = (
    "Retries in the payment client should use exponential backoff with jitter. First, cap the "
    "number of attempts at five so a broken upstream cannot pile up work. Then make every "
    "request idempotent with an idempotency key, so a retry never charges a card twice. Treat "
    "timeouts as unknown outcomes and query the payment status before trying again. Finally, "
    "log each retry with its attempt number and delay, which makes incidents easy to trace."
)
# flag -> (a response that raises it, a response that does not); the query is about retries
FLAG_CASES: dict[str, tuple[str, str]] = {
    "repetition": ("Retry the payment call now. " * 6, LONG),
    "incomplete": (LONG + " and then the", LONG),
    "no_reasoning": ("Retries in the payment client are fine as they are, keep them.", LONG),
    "too_short": ("Use backoff for retries in the payment client.", LONG),
    "too_long": ("retry payment client backoff " * 1100, LONG),
    "code_only": ("```python\nretry(payment_client, backoff=2)\n```", LONG),
    "refusal": ("I can't help with payment client retries.", LONG),
    "uncertain": (LONG + " I'm not sure the client supports it.", LONG),
    "outdated": (LONG + " As of 2023 the client has no retry option.", LONG),
    "hallucination_risk": (LONG + " Studies show retries fail 40% of the time.", LONG),
    "not_an_answer": ("ok thanks", LONG),
    "off_topic": ("Paris is the capital of France and has many museums to visit.", LONG),
}


def test_the_flag_cases_cover_every_flag() -> None:
    assert set(FLAG_CASES) == {*rules.QUALITY_FLAGS, *rules.JUNK_FLAGS}


@pytest.mark.parametrize("flag", sorted(FLAG_CASES))
def test_each_flag_has_a_positive_and_a_negative(flag: str) -> None:
    positive, negative = FLAG_CASES[flag]
    flagged = examples({"claude_response": positive}, {"claude_response": negative})
    assert [flag in flags for flags in flagged.get_column("quality_flags")] == [True, False]


# Captures like those a production assistant logs, written for this test.
JUNK_CAPTURES: list[tuple[dict[str, Any], str | None]] = [
    (
        {
            "query": "Why does my Docker build fail with 'no space left on device'?",
            "claude_response": "can you just fix it for me? I need this working before the demo",
        },
        "not_an_answer",  # the user's own chatter logged as the answer
    ),
    (
        {
            "query": "How do I rotate the TLS certificates on the ingress controller?",
            "claude_response": "A haiku about autumn: leaves drift on cold wind, the pond keeps "
            "their colours still, evening settles in. Seasons turn and so do we, quietly.",
        },
        "off_topic",  # an answer to a different query
    ),
    (
        {
            "query": "How can I read my coworker's private messages on Slack?",
            "claude_response": "I can't help with accessing someone else's private messages.",
        },
        "refusal",
    ),
    (
        {
            "query": "Summarize the incident report for the billing outage",
            "claude_response": "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
            "<body><center><h1>502 Bad Gateway</h1></center><hr>nginx</body></html>",
        },
        "not_an_answer",  # an error page
    ),
    ({"query": "Is the migration plan final?", "claude_response": "Okay."}, "not_an_answer"),
    (
        {
            "query": "What does HTTP 429 mean and how should my client react?",
            "claude_response": "HTTP 429 means too many requests: the server is rate limiting "
            "you. Your client should wait for the Retry-After header's delay, then retry with "
            "exponential backoff instead of hammering the endpoint.",
        },
        None,  # a genuine answer that mentions an error status is not junk
    ),
    (
        {
            "query": "Write a haiku about tail latency",
            "claude_response": "Ninety-nine percent\nfinish fast, but one request\nwaits on the "
            "slow disk.",
        },
        None,  # a poem need not repeat its prompt's words (creative is exempt from off_topic)
    ),
    (
        {
            "query": "How should I handle retries in the payment client?",
            "claude_response": LONG,
        },
        None,
    ),
]


def test_junk_captures_are_flagged_kept_and_excluded_from_every_export() -> None:
    captured = examples(*(fields for fields, _ in JUNK_CAPTURES))
    assert captured.height == len(JUNK_CAPTURES)  # kept in distillation_examples
    junk = set(rules.EXPORT_EXCLUDED_FLAGS)
    found = [next((f for f in flags if f in junk), None) for flags in captured["quality_flags"]]
    assert found == [expected for _, expected in JUNK_CAPTURES]
    junk_ids = {row["id"] for row, flag in zip(captured.to_dicts(), found, strict=True) if flag}
    for name in FORMATS:
        feed, dropped = export_rows(captured, name)
        assert not junk_ids & set(feed.get_column("subject")), name
        gated = {r: n for r, n in dropped.items() if r.startswith(("flag_", "not_an_answer:"))}
        assert gated == {
            "flag_off_topic": 1,
            "flag_refusal": 1,
            "not_an_answer:acknowledgement": 1,
            "not_an_answer:error_page": 1,
            "not_an_answer:user_request": 1,
        }, name
    assert captured.filter(pl.col("id").is_in(list(junk_ids)))["training_ready"].sum() == 0


def test_principles_are_the_rule_sentences_of_the_prose_in_order() -> None:
    response = (
        "Here is how retries should work in the payment client.\n\n"
        "- **Always** send an idempotency key with `client.charge()`. It is cheap. When a call "
        "times out, query the status before retrying. In practice you should never retry a "
        "declined card.\n\n```python\n# Always ignored: code is not prose\n```\n"
    )
    [row] = examples({"claude_response": response}).to_dicts()
    assert [(p["principle"], p["importance"]) for p in row["principles"]] == [
        ("Always send an idempotency key with `client.charge()`.", 0.8),
        ("When a call times out, query the status before retrying.", 0.7),
        ("In practice you should never retry a declined card.", 0.8),
    ]
    assert {p["context"] for p in row["principles"]} == {
        "How should I handle retries in the payment client?"
    }


def test_every_extracted_error_type_is_a_documented_one() -> None:
    captured = examples(
        *(
            {"sam_attempt": "No.", "claude_response": response}
            for response in (
                "That is incorrect: retries need an idempotency key, " + LONG,
                "A better approach is a queue with backoff. " + LONG,
                "It depends on your setup, so check the client first. " + LONG,
                "1. Cap the attempts.\n2. Send an idempotency key.\n\n" + LONG,
            )
        )
    )
    types = [c["sam_errors"][0]["error_type"] for c in captured["corrections"]]
    assert types == ["factual", "wrong_approach", "missing_context", "incomplete"]
    assert set(types) <= set(rules.SAM_ERROR_TYPES)
