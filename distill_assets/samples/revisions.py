"""Deterministic validation-loop logs: synthesis → validator REVISE/APPROVE/FAIL.

See docs/sources/revisions.md#raw-contract.

Every line is one validator verdict `{turn_id, ts, iteration, query, response, decision,
revision_hints, revision_focus, ...}` as the gateway's validation loop logs it. Turns come from
four kinds of flaw a validator asks to fix, each with realistic content:

- `formatting`: price comparisons given as prose → a markdown table, sorted, with a Retailer column;
- `accuracy`: a wrong fact → the corrected answer;
- `tone`: a curt customer-support reply → an apologetic one with a concrete next step;
- `citations`: an unsourced summary → the same summary with numbered sources.

and play out one of the loop outcomes in `OUTCOMES` (REVISE → APPROVE once or several times,
approved first, REVISE → FAIL, FAIL first, still revising, REVISE without hints, an unchanged
"revision", APPROVE then a stray REVISE, no query logged, a stray REVISE after the APPROVE).

One *batch* is `TURNS_PER_BATCH` turns (≈100 validations) written by two validator workers,
`validator-1.jsonl` and `validator-2.jsonl` (worker 2 logs ISO-8601 timestamps and extra fields);
a turn's iterations may land in either file, lines are in time order, so turns interleave. Each
batch adds `BAD_PER_BATCH` bad lines (≈5%), their kinds rotating through every reason the ingest
quarantines; `validator-2.jsonl` ends in a torn line. Each day also starts the loop of a turn at
23:59 whose APPROVE lands in the next day's folder (so both days count it as unpaired).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from distill_assets.contracts.revisions import QUARANTINE_REASONS
from distill_assets.samples import GeneratedDay

SOURCE = "revisions"
TURNS_PER_BATCH = 44
BAD_PER_BATCH = 5
WORKERS = ("validator-1.jsonl", "validator-2.jsonl")
SECONDS_PER_DAY = 86_400.0

# outcome -> (weight, decisions of the loop; "R" REVISE, "A" APPROVE, "F" FAIL)
OUTCOMES: dict[str, tuple[int, str]] = {
    "revise_approve": (30, "RA"),
    "revise_twice_approve": (10, "RRA"),
    "revise_thrice_approve": (4, "RRRA"),
    "approve_first": (24, "A"),
    "revise_fail": (8, "RRF"),
    "fail_first": (4, "F"),
    "still_revising": (4, "R"),
    "empty_hints": (5, "RA"),
    "unchanged": (3, "RA"),
    "approve_then_revise": (2, "AR"),
    "no_query": (2, "RA"),
    "revise_after_approve": (4, "RAR"),
}


@dataclass
class Draft:
    """What a scenario writes: the query, the responses in order, hints per REVISE, the focus."""

    query: str
    responses: list[str]
    hints: list[list[str]]
    focus: str


PRODUCTS: dict[str, list[tuple[str, int]]] = {
    "gaming laptops": [
        ("Lenovo IdeaPad Gaming 3", 649),
        ("MSI Thin GF63", 749),
        ("ASUS TUF Dash F15", 799),
        ("Acer Nitro V 15", 699),
        ("HP Victus 15", 679),
    ],
    "mechanical keyboards": [
        ("Keychron K2", 79),
        ("Redragon K552", 35),
        ("Logitech G413", 69),
        ("Royal Kludge RK61", 49),
        ("Corsair K65 Pro Mini", 109),
    ],
    "noise-cancelling headphones": [
        ("Sony WH-1000XM5", 328),
        ("Bose QuietComfort 45", 279),
        ("Anker Soundcore Space Q45", 99),
        ("Sennheiser Momentum 4", 299),
    ],
    "27-inch monitors": [
        ("Dell S2721D", 189),
        ("LG 27GL83A-B", 279),
        ("ASUS VG279Q1A", 169),
        ("Samsung Odyssey G5", 229),
    ],
}
RETAILERS = ("Amazon", "Best Buy", "Newegg", "Walmart", "B&H")

FACTS: list[tuple[str, str, str, str]] = [
    (
        "what is the boiling point of water at the top of Mount Everest?",
        "Water boils at 100 °C, so at the top of Everest it boils at 100 °C as well.",
        "About 70 °C. At 8,849 m the air pressure is roughly a third of sea level (~34 kPa), and "
        "water boils at a lower temperature under lower pressure.",
        "100 °C only holds at sea-level pressure; correct the boiling point for the summit",
    ),
    (
        "how many bones are in the adult human body?",
        "The adult human body has about 300 bones.",
        "An adult has 206 bones. Newborns have around 300, many of which fuse during growth.",
        "300 is the count at birth, not for adults; give the adult figure",
    ),
    (
        "when did the Berlin Wall fall?",
        "The Berlin Wall fell in 1991, shortly before the Soviet Union dissolved.",
        "The Berlin Wall fell on 9 November 1989, when East Germany opened its border crossings.",
        "The date is wrong: the wall fell in November 1989, German reunification was 1990",
    ),
    (
        "is UDP a reliable protocol?",
        "Yes, UDP guarantees delivery and ordering of packets, like TCP but faster.",
        "No. UDP is connectionless and gives no delivery or ordering guarantees; applications "
        "that need reliability use TCP or add it themselves (e.g. QUIC).",
        "UDP does not guarantee delivery or ordering; fix the comparison with TCP",
    ),
    (
        "what is the time complexity of binary search?",
        "Binary search runs in O(n) time because it may look at every element.",
        "O(log n): each comparison halves the remaining range of the sorted array.",
        "Binary search halves the search space each step; the complexity is logarithmic",
    ),
    (
        "how long does sunlight take to reach Earth?",
        "Sunlight reaches Earth in about 8 seconds.",
        "About 8 minutes and 20 seconds: the Sun is ~150 million km away and light travels at "
        "~300,000 km/s.",
        "Off by a factor of 60: it is about 8 minutes, not 8 seconds",
    ),
]

SUPPORT_CASES: list[tuple[str, str, str]] = [
    ("my order arrived damaged", "damaged order", "a free replacement shipped today"),
    ("I was charged twice for my subscription", "double charge", "a refund of the extra charge"),
    ("my account is locked and I have a deadline", "locked account", "an unlock link right now"),
    ("my refund still hasn't arrived after three weeks", "late refund", "an escalation to billing"),
]
TONE_HINTS = (
    "Open with an apology and acknowledge the customer's frustration",
    "Offer a concrete next step with a timeline instead of redirecting to the website",
    "Avoid blaming the customer; drop the phrase 'as stated in our policy'",
)

CITATION_TOPICS: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "what does the GDPR say about reporting a data breach?",
        "Companies must report a personal data breach to the regulator within 72 hours and "
        "inform affected people when the risk to them is high.",
        [
            ("GDPR Art. 33", "notification to the supervisory authority within 72 hours"),
            ("GDPR Art. 34", "communication to the data subject when the risk is high"),
        ],
    ),
    (
        "how effective are flu vaccines?",
        "Flu vaccines reduce the risk of illness by roughly 40-60% in seasons when the vaccine "
        "matches the circulating strains.",
        [("CDC, Vaccine Effectiveness Studies", "40-60% reduction in well-matched seasons")],
    ),
    (
        "summarize the main causes of the 2008 financial crisis",
        "The crisis grew out of a housing bubble, subprime lending, highly leveraged banks and "
        "complex mortgage securities whose risk was mispriced.",
        [
            ("Financial Crisis Inquiry Commission Report (2011)", "conclusions, pp. xv-xxviii"),
            ("Bernanke, 'The Courage to Act' (2015)", "chapters 5-6"),
        ],
    ),
]


def _formatting(rng: random.Random, revisions: int) -> Draft:
    category = rng.choice(sorted(PRODUCTS))
    picked = rng.sample(PRODUCTS[category], k=3)
    rows = [
        (name, price + rng.choice((0.99, 0.49, 0.0)), rng.choice(RETAILERS))
        for name, price in picked
    ]
    query = rng.choice(("find the cheapest {}", "compare prices for {}")).format(category)
    prose = " ".join(f"The {n} costs ${p:,.2f} at {r}." for n, p, r in rows)
    unsorted = "| Product | Price |\n|---|---|\n" + "\n".join(
        f"| {n} | ${p:,.2f} |" for n, p, _ in rows
    )
    table = "| Product | Price | Retailer |\n|---|---|---|\n" + "\n".join(
        f"| {n} | ${p:,.2f} | {r} |" for n, p, r in sorted(rows, key=lambda row: row[1])
    )
    hints = [
        ["Use table format for price comparisons"],
        ["Sort the rows by price, cheapest first", "Add a Retailer column"],
        ["Name the retailer for every price"],
    ]
    drafts = [prose, unsorted, unsorted + "\n\nPrices checked today."][:revisions]
    return Draft(query, [*drafts, table], hints[:revisions], "formatting")


def _accuracy(rng: random.Random, revisions: int) -> Draft:
    query, wrong, right, hint = rng.choice(FACTS)
    vague = wrong.rstrip(".") + ", although this can vary."
    drafts = [wrong, vague, vague][:revisions]
    hints = [[hint], ["Still inaccurate: state the corrected value plainly"], ["Explain why"]]
    return Draft(query, [*drafts, right], hints[:revisions], "accuracy")


def _tone(rng: random.Random, revisions: int) -> Draft:
    complaint, topic, remedy = rng.choice(SUPPORT_CASES)
    order = f"#{rng.randrange(100_000, 999_999)}"
    query = f"write a reply to a customer who says: '{complaint}' (order {order})"
    curt = f"As stated in our policy, {topic} issues must be reported through the website."
    warmer = f"Sorry about the {topic}. Please report it through the website."
    best = (
        f"I'm really sorry about the {topic} on order {order} - that's frustrating. I've arranged "
        f"{remedy}, and you'll get a confirmation e-mail within the hour."
    )
    drafts = [curt, warmer, warmer + " Thanks."][:revisions]
    return Draft(query, [*drafts, best], [[h] for h in TONE_HINTS][:revisions], "tone")


def _citations(rng: random.Random, revisions: int) -> Draft:
    query, summary, sources = rng.choice(CITATION_TOPICS)
    marks = "".join(f"[{i}]" for i in range(1, len(sources) + 1))
    refs = "\n".join(f"[{i}] {title}: {what}" for i, (title, what) in enumerate(sources, 1))
    partial = f"{summary} (source: official guidance)"
    drafts = [summary, partial, partial][:revisions]
    hints = [
        ["Cite sources for the claims and figures"],
        ["Replace 'official guidance' with the specific documents"],
        ["Number the references"],
    ]
    return Draft(query, [*drafts, f"{summary} {marks}\n\n{refs}"], hints[:revisions], "citations")


SCENARIOS: tuple[Callable[[random.Random, int], Draft], ...] = (
    _formatting,
    _accuracy,
    _tone,
    _citations,
)


def _loop(rng: random.Random, outcome: str) -> tuple[Draft, str]:
    """Return the scenario content and the decisions of a turn with `outcome`."""
    decisions = OUTCOMES[outcome][1]
    revisions = max(1, decisions.count("R"))
    draft = rng.choice(SCENARIOS)(rng, min(revisions, 3))
    if outcome == "unchanged":
        draft.responses[1] = draft.responses[0] + " "
    if outcome == "empty_hints":
        draft.hints = [[] for _ in draft.hints]
    return draft, decisions


def _validations(
    rng: random.Random, turn_id: str, start: float, outcome: str
) -> list[tuple[float, int, dict[str, Any]]]:
    """Return the validator lines of one turn: (ts, worker, record) per iteration."""
    draft, decisions = _loop(rng, outcome)
    *drafts, approved = draft.responses
    ts = start
    lines = []
    for i, decision in enumerate(decisions, start=1):
        revise = decision == "R"
        response = approved if decision == "A" else drafts[min(i - 1, len(drafts) - 1)]
        if outcome == "revise_after_approve" and i == len(decisions):
            response = approved + "\n\n(Updated after a final review.)"
        logs_query = outcome != "no_query" and (i == 1 or rng.random() < 0.5)
        record = {
            "turn_id": turn_id,
            "ts": round(ts, 3),
            "iteration": i,
            "query": draft.query if logs_query else None,
            "response": response,
            "decision": {"R": "REVISE", "A": "APPROVE", "F": "FAIL"}[decision],
            "revision_hints": draft.hints[min(i - 1, len(draft.hints) - 1)] if revise else [],
            "revision_focus": draft.focus if revise else None,
        }
        lines.append((ts, rng.randrange(len(WORKERS)), record))
        ts += rng.uniform(4.0, 40.0)
    return lines


def _bad_record(kind: str, turn_id: str, ts: float) -> str | dict[str, Any]:
    """One line that the ingest quarantines with reason `kind` (a JSON record or raw text)."""
    ok: dict[str, Any] = {
        "turn_id": turn_id,
        "ts": round(ts, 3),
        "iteration": 1,
        "query": "what is the capital of Australia?",
        "response": "Sydney is the capital of Australia.",
        "decision": "REVISE",
        "revision_hints": ["The capital is Canberra"],
        "revision_focus": "accuracy",
    }
    without = {k: v for k, v in ok.items() if k != kind.removeprefix("missing_")}
    invalid: dict[str, Any] = {
        "invalid_turn_id": {"turn_id": {"id": turn_id}},
        "invalid_ts": {"ts": round(ts * 1000)},
        "invalid_iteration": {"iteration": 0},
        "invalid_decision": {"decision": "NEEDS_WORK"},
        "invalid_response": {"response": {"text": ok["response"]}},
        "invalid_query": {"query": [ok["query"]]},
        "invalid_revision_hints": {"revision_hints": {"hint": "The capital is Canberra"}},
        "invalid_revision_focus": {"revision_focus": ["accuracy", "tone"]},
    }
    if kind == "invalid_json":
        return json.dumps(ok, ensure_ascii=False).replace('"REVISE"', "REVISE")
    if kind == "not_an_object":
        return json.dumps([turn_id, "REVISE", ok["response"]])
    if kind == "duplicate_key":
        # the decision twice: DuckDB would read APPROVE, Python's json REVISE
        return json.dumps({**ok, "decision": "APPROVE"})[:-1] + ', "decision": "REVISE"}'
    if kind in invalid:
        return {**ok, **invalid[kind]}
    return without


# every quarantine reason a single line can have (a torn line is only ever the last one)
LINE_KINDS: tuple[str, ...] = tuple(r for r in QUARANTINE_REASONS if r != "torn_last_line")


def _encode(record: dict[str, Any] | str, worker: int) -> str:
    """Serialize a record as its worker logs it (worker 2: ISO timestamps and extra fields)."""
    if isinstance(record, str):
        return record
    if worker == 1 and isinstance(record.get("ts"), float):
        stamp = datetime.fromtimestamp(record["ts"], UTC).isoformat(timespec="milliseconds")
        record = {**record, "ts": stamp.replace("+00:00", "Z"), "validator": "haiku-judge-v2"}
    return json.dumps(record, ensure_ascii=False)


def _late_turn(seed: int, day: str) -> list[tuple[float, int, dict[str, Any]]]:
    """Return the lines of the turn that starts at 23:59 on `day`, approved after midnight."""
    rng = random.Random(f"{seed}:{day}:late")
    start = _day_start(day) + SECONDS_PER_DAY - 30.0
    turn_id = f"turn_{day.replace('-', '')}_late"
    lines = _validations(rng, turn_id, start, "revise_approve")
    return [
        (start + 45.0 * i, worker, {**record, "ts": start + 45.0 * i})
        for i, (_, worker, record) in enumerate(lines)
    ]


def _day_start(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def generate_day(out_dir: Path | str, day: str, scale: int, seed: int) -> GeneratedDay:
    """Write `scale` batches of validation logs for `day` under `<out_dir>/revisions/<day>/`."""
    folder = Path(out_dir) / SOURCE / day
    result = GeneratedDay(source=SOURCE, day=day)
    names, weights = zip(*((name, w) for name, (w, _) in OUTCOMES.items()), strict=True)
    lines: list[tuple[float, int, dict[str, Any] | str]] = []
    rotation = date.fromisoformat(day).toordinal()
    stamp = day.replace("-", "")
    for batch in range(scale):
        rng = random.Random(f"{seed}:{day}:{batch}")
        good: list[tuple[float, int, dict[str, Any]]] = []
        for n in range(TURNS_PER_BATCH):
            start = _day_start(day) + rng.uniform(60.0, SECONDS_PER_DAY - 600.0)
            turn_id = f"turn_{stamp}_{batch * TURNS_PER_BATCH + n:05d}"
            good.extend(_validations(rng, turn_id, start, rng.choices(names, weights)[0]))
        lines.extend(good)
        for k in range(BAD_PER_BATCH):
            kind = LINE_KINDS[(rotation + batch * BAD_PER_BATCH + k) % len(LINE_KINDS)]
            ts, worker, record = rng.choice(good)
            if kind == "duplicate_validation":
                # an exact re-log of a line, by the same worker, after the original
                lines.append((ts + 0.5, worker, dict(record)))
            else:
                bad_id = f"turn_{stamp}_bad{batch * BAD_PER_BATCH + k:04d}"
                lines.append((ts + 1.0, rng.randrange(len(WORKERS)), _bad_record(kind, bad_id, ts)))
            result.bad_records[kind] = result.bad_records.get(kind, 0) + 1
    previous = (date.fromisoformat(day) - timedelta(days=1)).isoformat()
    lines.extend(line for line in _late_turn(seed, previous) if line[0] >= _day_start(day))
    lines.extend(
        line for line in _late_turn(seed, day) if line[0] < _day_start(day) + SECONDS_PER_DAY
    )
    lines.sort(key=lambda line: (line[0], line[1]))
    folder.mkdir(parents=True, exist_ok=True)
    for worker, name in enumerate(WORKERS):
        texts = [_encode(record, worker) for _, w, record in lines if w == worker]
        torn = ""
        if worker == len(WORKERS) - 1 and texts:
            torn = texts[-1][: len(texts[-1]) // 2]
            result.bad_records["torn_last_line"] = 1
        path = folder / name
        path.write_text("".join(t + "\n" for t in texts) + torn, encoding="utf-8")
        result.files.append(path)
        result.records += len(texts) + (1 if torn else 0)
    return result
