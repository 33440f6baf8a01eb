"""Rules for improvement principles: extraction, format, confidence; and merging.

Inputs of an extraction (docs/sources/revisions.md#principles): the query cut to
`QUERY_CHARS`; the original and the revised response each cut to `RESPONSE_CHARS` as the first
`HEAD_SHARE` of that budget plus the last part (60% head + 40% tail), so the beginning and the end
of a long answer, where most revisions show, are both seen; the hints joined in order by
`HINT_SEPARATOR`, the foci likewise.

The offline extractor is a rule set, applied to whole columns:

- *signals* of the before/after difference (`SIGNALS`, tested on original and revised): a markdown
  table appeared, a list appeared, numbered sources or links appeared, headings appeared, the
  response shrank below `SHRANK_RATIO` of its length, or grew above `GREW_RATIO`;
- `category` (one of `CATEGORIES`), the first rule that applies: the (first) focus names a
  category (or an alias in `FOCUS_ALIASES`); a hint matches a category's keywords
  (`HINT_KEYWORDS`, in that order); a signal implies one (`SIGNAL_CATEGORY`); else `general`;
- `trigger_pattern`: the first task pattern in `TASK_PATTERNS` the query matches ("find the
  cheapest gaming laptops" → "price comparison queries"); else the query's first
  `FALLBACK_TRIGGER_WORDS` content words (stop words dropped) + " queries";
- `title`, the principle sentence, "Why This Works", and the pattern (original issue →
  successful fix): templates keyed by the strongest signal (`SIGNAL_ORDER`), else by category;
  a template without a fixed action uses the validator's hints as the action.

Merging (beyond the seed): two principles with the same category whose triggers' embeddings have
cosine ≥ `MERGE_TRIGGER_SIMILARITY` (transitively) are one principle. Its `support` is the number
of turns behind it, and its confidence starts at the seed's `BASE_CONFIDENCE` for one turn and
grows by `CONFIDENCE_STEP` per further turn, capped at `MAX_CONFIDENCE`:
`confidence = min(MAX_CONFIDENCE, BASE_CONFIDENCE + CONFIDENCE_STEP * (support - 1))`.
"""

from __future__ import annotations

QUERY_CHARS = 500
RESPONSE_CHARS = 800
HEAD_SHARE = 0.6
HINT_SEPARATOR = "; "

# the LLM extractor (docs/sources/revisions.md#llm-extractor): REFLEX role, temperature 0.3,
# ~150 output tokens
LLM_TEMPERATURE = 0.3
LLM_MAX_TOKENS = 150

BASE_CONFIDENCE = 0.8
CONFIDENCE_STEP = 0.05
MAX_CONFIDENCE = 0.95
MERGE_TRIGGER_SIMILARITY = 0.9

CATEGORIES: tuple[str, ...] = (
    "formatting",
    "structure",
    "accuracy",
    "completeness",
    "citation",
    "conciseness",
    "tone",
    "safety",
    "clarity",
    "general",
)
FALLBACK_CATEGORY = "general"

# a focus the validator gave, lower-cased → its category (the categories name themselves)
FOCUS_ALIASES: dict[str, str] = {
    "format": "formatting",
    "layout": "formatting",
    "presentation": "formatting",
    "organization": "structure",
    "organisation": "structure",
    "correctness": "accuracy",
    "factuality": "accuracy",
    "facts": "accuracy",
    "coverage": "completeness",
    "detail": "completeness",
    "citations": "citation",
    "sources": "citation",
    "references": "citation",
    "brevity": "conciseness",
    "length": "conciseness",
    "style": "tone",
    "politeness": "tone",
    "empathy": "tone",
    "harm": "safety",
    "policy": "safety",
    "readability": "clarity",
}

# category → regex over the lower-cased hints; tested in this order
HINT_KEYWORDS: dict[str, str] = {
    "safety": r"\b(unsafe|harm|danger|warning|disclaimer|medical advice|legal advice)",
    "citation": r"\b(cite|citation|source|reference|link)",
    "formatting": r"\b(table|format|markdown|bold|bullet|column)",
    "structure": r"\b(list|step|section|heading|organi[sz]e|order|structure|number the)",
    "accuracy": r"\b(wrong|incorrect|inaccurate|error|fact|correct|outdated|verify)",
    "conciseness": r"\b(shorter|concise|brief|too long|trim|cut|wordy|tl;?dr)",
    "completeness": r"\b(missing|include|add|mention|also|complete|cover)",
    "tone": r"\b(tone|apolog|polite|friendly|empath|rude|curt|warm)",
    "clarity": r"\b(clear|clarify|confusing|simpl|jargon|explain)",
}

SIGNAL_ORDER: tuple[str, ...] = (
    "table_added",
    "sources_added",
    "list_added",
    "headings_added",
    "shrank",
    "grew",
)
# signal → regex (multi-line) a response has; `shrank` and `grew` compare lengths instead
SIGNALS: dict[str, str] = {
    "table_added": r"(?m)^\s*\|.*\|\s*$\n^\s*\|?\s*:?-{3,}",
    "sources_added": r"(?m)(\[\d+\]|https?://|^\s*(sources?|references?)\s*:)",
    "list_added": r"(?m)(^\s*([-*•]|\d+[.)])\s+\S.*\n){2,}",
    "headings_added": r"(?m)^#{1,6}\s+\S",
}
SHRANK_RATIO = 0.7
GREW_RATIO = 1.5
SIGNAL_CATEGORY: dict[str, str] = {
    "table_added": "formatting",
    "sources_added": "citation",
    "list_added": "structure",
    "headings_added": "structure",
    "shrank": "conciseness",
    "grew": "completeness",
}

# (regex over the lower-cased query, trigger pattern); the first match wins
TASK_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        r"\b(cheap|cheapest|price|prices|pricing|cost|costs|deal|deals|budget|under \$)",
        "price comparison queries",
    ),
    (r"\b(compare|comparison|versus|vs\.?|difference between)\b", "comparison queries"),
    (
        r"\b(refund|order|delivery|shipping|cancel|complain|broken|account|support)",
        "customer support replies",
    ),
    (r"\b(law|legal|regulation|gdpr|hipaa|compliance|contract)", "legal and regulatory questions"),
    (r"\b(summari[sz]e|summary|tl;?dr|overview)", "summary requests"),
    (r"\b(write|draft|tweet|email|post|announce|slogan)", "writing requests"),
    (r"\b(code|function|python|sql|javascript|bug|stack trace|compile)", "coding questions"),
    (r"\b(how (do|to|can|should)|steps|set up|install|configure|guide)\b", "how-to questions"),
    (r"\b(recommend|best|top \d+|which .* should)", "recommendation queries"),
    (r"\b(how (far|long|many|much|old)|when|who|where|what is|what are)\b", "factual questions"),
)
FALLBACK_TRIGGER_WORDS = 3
STOP_WORDS: tuple[str, ...] = (
    "a",
    "an",
    "the",
    "and",
    "or",
    "of",
    "for",
    "to",
    "in",
    "on",
    "at",
    "by",
    "with",
    "about",
    "is",
    "are",
    "was",
    "be",
    "do",
    "does",
    "did",
    "can",
    "could",
    "should",
    "would",
    "will",
    "i",
    "me",
    "my",
    "we",
    "you",
    "your",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "please",
    "what",
    "which",
    "how",
    "why",
    "give",
    "tell",
    "show",
    "find",
    "get",
    "some",
    "any",
)

# template key (a signal or a category) → title suffix, action, why, original issue, fix.
# `{hints}` is the validator's hints (first letter lower-cased unless an acronym, no final period),
# `{columns}` the revised table's header cells, `{before}`/`{after}` the responses' lengths in
# characters, `{category}` the category in title case.
TEMPLATES: dict[str, dict[str, str]] = {
    "table_added": {
        "title": "Table Format",
        "action": "present the options as a markdown table with columns for {columns} "
        "rather than prose paragraphs",
        "why": "Users can scan tables faster than reading sentences. Side-by-side comparison is "
        "more intuitive for decision-making.",
        "issue": "Response listed the items in paragraph form.",
        "fix": "Converted to table format with clear headers ({columns}).",
    },
    "sources_added": {
        "title": "Cited Sources",
        "action": "back every factual claim with a numbered source",
        "why": "Readers can check a claim only when they know where it comes from. Numbered "
        "references keep the answer readable while making it verifiable.",
        "issue": "Response made claims without naming their sources.",
        "fix": "Added numbered references for the claims ({hints}).",
    },
    "list_added": {
        "title": "List Structure",
        "action": "break the answer into a list with one item per point",
        "why": "A list shows at a glance how many points there are and lets the reader follow "
        "them one by one.",
        "issue": "Response packed several points into running prose.",
        "fix": "Restructured the answer as a list ({hints}).",
    },
    "headings_added": {
        "title": "Sectioned Answer",
        "action": "organize the answer under short headings",
        "why": "Headings let the reader jump to the part they need.",
        "issue": "Response was one undivided block of text.",
        "fix": "Split the answer into sections with headings ({hints}).",
    },
    "shrank": {
        "title": "Concise Answer",
        "action": "lead with the key point and cut everything that does not support it",
        "why": "A short answer respects the reader's time and keeps the key point visible.",
        "issue": "Response was longer than needed ({before} characters).",
        "fix": "Cut the response to {after} characters ({hints}).",
    },
    "grew": {
        "title": "Complete Answer",
        "action": "{hints}",
        "why": "An answer that leaves out what the user needs forces a follow-up question.",
        "issue": "Response left out what the validator asked for ({before} characters).",
        "fix": "Expanded the response to {after} characters: {hints}.",
    },
    "accuracy": {
        "title": "Accuracy Check",
        "action": "check every number, unit and date against a reliable figure before stating it",
        "why": "A wrong fact undermines trust in the whole answer; checking it first is cheaper "
        "than a revision.",
        "issue": "Response stated something the validator found incorrect.",
        "fix": "Corrected the facts: {hints}.",
    },
    "tone": {
        "title": "Tone",
        "action": "{hints}",
        "why": "The same content lands better when its tone fits the reader's situation.",
        "issue": "Response's tone did not fit the situation.",
        "fix": "Adjusted the tone: {hints}.",
    },
    "safety": {
        "title": "Safety",
        "action": "{hints}",
        "why": "An answer that could cause harm must carry the caveats that prevent it.",
        "issue": "Response lacked a needed safety caveat.",
        "fix": "Added the caveat: {hints}.",
    },
    FALLBACK_CATEGORY: {
        "title": "{category}",
        "action": "{hints}",
        "why": "The validator approved the response only once this was done; doing it from the "
        "start saves a revision.",
        "issue": "Validator asked: {hints}.",
        "fix": "Applied the hints: {hints}.",
    },
}
