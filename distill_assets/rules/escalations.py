r"""Rules for escalations: reasoning indicators, classification, quality flags and score.

Documented in docs/sources/escalations.md (#reasoning-extraction, #quality-score,
#quality-flags). Everything here is data applied as vectorized Polars expressions (Rust `regex`
crate) by `defs/escalations/examples.py`.

Regex dialect. The seed's indicator patterns are Python `re` patterns searched with `re.search`
and no flags: case-sensitive, `.` does not cross a newline. Rust `regex` has the same defaults and
the seed's patterns use no look-around or back-references, so they are applied verbatim with one
deliberate change: the CLI-tool indicator gets a leading word boundary (`\b`), because verbatim it
matches inside ordinary words ("a single digit number" contains "git "), and a single tool hit is
enough to label an answer `tool_use`. Unicode classes (`\d`, `\s`) agree between the two engines
except for the ASCII separators U+001C..U+001F, which Python counts as whitespace.

Patterns added by distill (the seed names `meta_cognitive`, `multi_step` and the flags but gives
no patterns for them) carry `(?i)` where case does not matter and avoid look-around.
"""

from __future__ import annotations

# --- Reasoning extraction patterns (the original ones, verbatim except the noted `\b`) ------------

COT_INDICATORS: tuple[str, ...] = (
    r"(?:Let me|I'll|I will) (?:think|work|break|analyze)",
    r"(?:First|Step 1|To start)",
    r"(?:Second|Next|Then|Step 2)",
    r"(?:Third|After that|Step 3)",
    r"(?:Finally|In conclusion|Therefore|So)",
    r"(?:The reason|Because|Since) .* (?:Therefore|So|Thus)",
    r"\d+\.\s+.*\n\d+\.\s+",
)
TOOL_INDICATORS: tuple[str, ...] = (
    r"```(?:bash|shell|sh)\n",
    r"```(?:python|py)\n.*(?:import|def|class)",
    r"(?:I would|Let me) (?:run|execute|call)",
    r"(?:Using|With) (?:the|this) (?:tool|function|command)",
    r"\b(?:curl|git|npm|pip|cargo)\s+",
)
CORRECTION_INDICATORS: tuple[str, ...] = (
    r"(?:Actually|However|But|Although)",
    r"(?:That's not quite|The correct|A better)",
    r"(?:slight|small|minor) (?:issue|error|mistake)",
    r"(?:missed|forgot|overlooked)",
    r"(?:should be|instead of|rather than)",
)
# distill's own: the seed's `meta_cognitive` type is "self-reflection, uncertainty".
UNCERTAINTY_INDICATORS: tuple[str, ...] = (
    r"(?i)\bI(?:['’]m| am) not (?:entirely |completely |100% |quite )?(?:sure|certain)\b",
    r"(?i)\bI (?:don['’]t|do not) (?:really |actually |honestly )?(?:know|have (?:enough|reliable)"
    r" information)\b",
    r"(?i)\b(?:I|we) (?:can['’]t|cannot) (?:be (?:certain|sure)|know for sure|predict)\b",
    r"(?i)\b(?:I|this) (?:might|may|could) (?:well )?be (?:completely |totally |entirely )?wrong\b",
    r"(?i)\b(?:it['’]s|it is) (?:hard|difficult|impossible) to (?:say|know|predict)\b",
    # distill, issue 27: hedges SAM's own tests expect to raise `uncertain`
    r"(?i)\bI(?:['’]m| am) (?:very |quite |a bit |a little |somewhat |rather )?"
    r"(?:uncertain|unsure)\b",
    r"(?i)^\W*not (?:entirely |completely |100% |quite )?(?:sure|certain)\b",
    r"(?i)\b(?:pure|just|only) speculation\b|\bI(?:['’]m| am) (?:just )?guessing\b"
    r"|\bmy (?:best )?guess is\b",
)
REFLECTION_INDICATORS: tuple[str, ...] = (
    r"(?i)\b(?:let me|I should|I need to) (?:reconsider|double-check|re-check|re-examine)\b",
    r"(?i)\bon (?:second thought|reflection)\b",
    r"(?i)\bI (?:was|am) (?:wrong|mistaken)\b",
    r"(?i)\bmy (?:earlier|previous|first) (?:answer|assumption|reasoning)\b",
)

# --- Reasoning type (docs/sources/escalations.md#reasoning-types) ---------------------------------

REASONING_TYPES: tuple[str, ...] = (
    "chain_of_thought",
    "tool_use",
    "correction",
    "direct",
    "multi_step",
    "meta_cognitive",
)
# The first type whose condition holds wins; `direct` when none does.
#   correction       SAM made an attempt and >= MIN_CORRECTION_HITS correction indicators match
#                    (a value correction, SAM_ERROR_RULES' `wrong_value`, counts as one more hit)
#   tool_use         >= MIN_TOOL_HITS tool indicators match
#   multi_step       the query asks >= MULTI_STEP_MIN_SUBTASKS things and the answer has
#                    >= MULTI_STEP_MIN_STEPS numbered steps
#   chain_of_thought >= MIN_COT_HITS CoT indicators match, or >= COT_MIN_STEPS numbered steps
#   meta_cognitive   >= MIN_META_HITS uncertainty/reflection indicators match
REASONING_PRECEDENCE: tuple[str, ...] = (
    "correction",
    "tool_use",
    "multi_step",
    "chain_of_thought",
    "meta_cognitive",
)
MIN_CORRECTION_HITS = 2
MIN_TOOL_HITS = 1
MIN_COT_HITS = 2
COT_MIN_STEPS = 3
MIN_META_HITS = 1
MULTI_STEP_MIN_SUBTASKS = 2
MULTI_STEP_MIN_STEPS = 3

# tool_usage: fence languages and CLI tools named in the answer, normalised by TOOL_ALIASES.
TOOL_NAME_PATTERN = r"```(?:bash|shell|sh|python|py)\b|\b(?:curl|git|npm|pip|cargo)\s"
TOOL_NAME_STRIP = r"```|\s"
TOOL_ALIASES: dict[str, str] = {"py": "python", "sh": "bash", "shell": "bash"}

# A numbered step is a line starting with `1.`, `2)` or `Step 3:`; its text is the rest of the
# line (seed `reasoning_steps[].content`). `action`/`reasoning` are not derivable offline.
STEP_PREFIX = r"^[ \t]*(?:\d+[.)]|Step[ \t]+\d+[:.])[ \t]+"
STEP_LINE = r"(?m)" + STEP_PREFIX + r"\S.*$"
# When fewer than MIN_ORDERED_STEPS lines are numbered, the steps are the answer's section headers
# (markdown `#` headers, `Part/Phase/Stage/Step N:` lines, bold `**Step N…**` openings), else
# its ordinal sentences ("First, …", "Then …", "Finally, …" at a sentence start), when there are
# at least MIN_ORDERED_STEPS of them; both are read from the prose (code blocks removed). A
# header step's text is the header line; an ordinal step's text is its sentence without the
# ordinal. Otherwise the (0 or 1) numbered lines are the steps.
MIN_ORDERED_STEPS = 2
HEADER_STEP_PREFIX = (
    r"^[ \t]*(?:#{1,6}[ \t]+(?:\d+[.)][ \t]*)?|(?:\*\*)?(?:Part|Phase|Stage|Step)[ \t]+\d+[:.)]?"
    r"[ \t]*)"
)
HEADER_STEP_LINE = r"(?m)" + HEADER_STEP_PREFIX + r"\S.*$"
ORDINAL_WORDS = (
    r"(?:First(?:ly)?|Second(?:ly)?|Third(?:ly)?|Fourth|Fifth|Next|Then|After that|Afterwards"
    r"|Finally|Lastly|To start|To begin|Start by)"
)
ORDINAL_STEP = r"(?m)(?:^|[.!?:][ \t]+)[ \t]*" + ORDINAL_WORDS + r"\b,?[ \t]+[^.!?\n]*[^.!?\n \t]"
ORDINAL_STEP_PREFIX = r"^[.!?:]?[ \t]*" + ORDINAL_WORDS + r"\b,?[ \t]+"
HEADER_CLEANUP = r"\*\*"
# Nested steps (one more complexity point): ordered steps (numbered, headers or ordinals, at
# least MIN_ORDERED_STEPS) and, under them, a second level: list items of another kind (numbered
# or bulleted, at least MIN_ORDERED_STEPS) or indented list items.
LIST_ITEM = r"(?m)^[ \t]*(?:\d+[.)]|[-*+])[ \t]+\S"
INDENTED_LIST_ITEM = r"(?m)^[ \t]{2,}(?:\d+[.)]|[-*+])[ \t]+\S"
# Sub-tasks in a query: question marks plus list-item lines.
QUERY_SUBTASK = r"(?m)\?|^[ \t]*(?:\d+[.)]|[-*])[ \t]+\S"

# --- Classification when the producer did not pre-label it ----------------------------------------

DOMAINS: tuple[str, ...] = ("code", "reasoning", "creative", "factual", "planning", "analysis")
# (domain, pattern over the query); first match wins, then code if the answer holds a fenced code
# block, else `DEFAULT_DOMAIN`.
DOMAIN_RULES: tuple[tuple[str, str], ...] = (
    ("creative", r"(?i)\b(?:poem|haiku|story|lyrics|limerick|slogan|tagline)\b"),
    ("planning", r"(?i)\b(?:plan|roadmap|migrat\w*|schedule|milestones?|rollout)\b"),
    (
        "code",
        r"(?i)\b(?:error|exception|traceback|bug|function|class|compile\w*|python|javascript"
        r"|typescript|rust|sql|regex|api|git|docker|npm|pip|react|code|script|algorithm\w*"
        r"|quicksort|complexity)\b",
    ),
    ("analysis", r"(?i)\b(?:compare|analy[sz]e|trade-?offs?|pros and cons|evaluate|versus|vs)\b"),
    (
        "reasoning",
        r"(?i)\b(?:how many|puzzle|riddle|prove|probability|logic|calculate|how long|how far"
        r"|prime)\b",
    ),
)
CODE_FENCE = r"```"
DEFAULT_DOMAIN = "factual"
# (subdomain, pattern over query + answer); first match wins, else null.
SUBDOMAIN_RULES: tuple[tuple[str, str], ...] = (
    ("python", r"(?i)\bpython\b|```(?:python|py)\b"),
    ("typescript", r"(?i)\btypescript\b|```(?:typescript|ts|tsx)\b"),
    ("javascript", r"(?i)\b(?:javascript|react|node\.?js)\b|```(?:javascript|js|jsx)\b"),
    ("sql", r"(?i)\b(?:sql|postgres\w*|sqlite)\b|```sql\b"),
    ("docker", r"(?i)\b(?:docker|compose)\b"),
    ("git", r"(?i)\bgit\b"),
    ("shell", r"(?i)\b(?:bash|shell)\b|```(?:bash|shell|sh)\b"),
    ("math", r"(?i)\b(?:probability|equation|percent|prime|arithmetic|km/h)\b"),
)
# (task_type, pattern over the query); first match wins, else `DEFAULT_TASK_TYPE`.
TASK_TYPE_RULES: tuple[tuple[str, str], ...] = (
    ("debug", r"(?i)\b(?:error|exception|bug|fix|fails?|failing|crash\w*|traceback|undefined)\b"),
    ("refactor", r"(?i)\b(?:refactor|clean up|simplify|restructure)\b"),
    ("implement", r"(?i)\b(?:implement|write|create|build|generate)\b"),
    ("plan", r"(?i)\b(?:plan|roadmap|migrat\w*|schedule)\b"),
    ("explain", r"(?i)\b(?:explain|what|why|how|difference)\b"),
)
DEFAULT_TASK_TYPE = "answer"

# Complexity (1-10) when not pre-labelled: 1, plus one per COMPLEXITY_WORDS_PER_POINT words of the
# answer (at most COMPLEXITY_MAX_LENGTH_POINTS), plus one for each COMPLEXITY_STEP_THRESHOLDS
# the number of ordered steps reaches (the most of numbered lines, headers and ordinal sentences),
# one for nested steps (see above), one for each of: a fenced code block, a non-empty query
# context, a query of more than COMPLEXITY_LONG_QUERY_WORDS words. Clamped to [1, 10]. So a
# four-step explanation is at least 3, as SAM's own tests expect of multi-step reasoning.
COMPLEXITY_WORDS_PER_POINT = 150
COMPLEXITY_MAX_LENGTH_POINTS = 4
COMPLEXITY_STEP_THRESHOLDS: tuple[int, ...] = (3, 4, 6)
COMPLEXITY_LONG_QUERY_WORDS = 40

# --- Quality flags (docs/sources/escalations.md#quality-flags) ------------------------------------

QUALITY_FLAGS: tuple[str, ...] = (
    "repetition",
    "incomplete",
    "no_reasoning",
    "too_short",
    "too_long",
    "code_only",
    "refusal",
    "uncertain",
    "outdated",
    "hallucination_risk",
)
# `outdated` and `hallucination_risk` need fact checking; they are never set offline.
# Tokens are approximated by whitespace-separated words.
TOKEN_PATTERN = r"\S+"
TOO_SHORT_TOKENS = 50  # too_short: fewer tokens than this
TOO_LONG_TOKENS = 4000  # too_long: more tokens than this
# code_only: the answer has a fenced code block and fewer than this many words outside fences.
CODE_BLOCK = r"(?s)```.*?(?:```|\z)"
CODE_ONLY_MAX_PROSE_WORDS = 10
REFUSAL_INDICATORS: tuple[str, ...] = (
    r"(?i)\bI(?: can't|cannot| can not| won't| will not| am unable to|'m unable to|'m not able to)"
    r" (?:help|assist|provide|share|do that|comply|give)",
    r"(?i)\b(?:I'm sorry|I apologize|Sorry), but I (?:can't|cannot|won't)\b",
)
# uncertain: any UNCERTAINTY_INDICATORS pattern matches.
# incomplete: an unclosed code fence, or the answer ends in "...", a comma/colon/semicolon, an
# opening bracket, or a dangling article/conjunction/preposition.
INCOMPLETE_ENDING = r"(?i)(?:\.\.\.|…|[,:;(\[{]|\b(?:and|or|the|to|of|a|an|with|for|but))\s*\z"
# no_reasoning: no CoT indicator matches and fewer than NO_REASONING_MAX_STEPS numbered steps.
NO_REASONING_MAX_STEPS = 2
# repetition: outside code blocks, split the answer into sentences/lines, keep units of at least
# REPETITION_MIN_UNIT_CHARS characters (trimmed, lower-cased); flag when there are at least
# REPETITION_MIN_UNITS units and the share of repeated units is >= REPETITION_MIN_SHARE.
REPETITION_UNIT = r"[^.!?\n]+"
REPETITION_MIN_UNIT_CHARS = 12
REPETITION_MIN_UNITS = 4
REPETITION_MIN_SHARE = 0.3

# --- Quality score (docs/sources/escalations.md#quality-score) ------------------------------------

SCORE_BASE = 0.5
SCORE_REASONING_STEPS = 0.1  # >= SCORE_MIN_REASONING_STEPS numbered steps
SCORE_MIN_REASONING_STEPS = 2
SCORE_CORRECTION = 0.15  # corrections.sam_errors non-empty (reasoning_type == correction)
SCORE_PRINCIPLES = 0.1  # >= 1 extracted principle: needs an LLM, always 0 offline
SCORE_COMPLEXITY = 0.05  # complexity >= SCORE_MIN_COMPLEXITY
SCORE_MIN_COMPLEXITY = 5
SCORE_SHORT_RESPONSE = -0.2  # claude_response shorter than SCORE_SHORT_RESPONSE_CHARS characters
SCORE_SHORT_RESPONSE_CHARS = 100
# distill, issue 27: the seed's length proxy ("too short to be useful") does not apply to a code
# answer, one that holds a closed fenced block with at least one non-blank line of code: code is
# substance, a one-line command can be the whole answer (the seed does not lower the score of
# `code_only` answers; only this length proxy did). Whether the reply answers the query at all is
# the answer-ness model's decision, which the gate applies before the quality minimum.
SCORE_SHORT_EXEMPT_CODE = r"(?s)```[^\n`]*\n\s*[^\s`].*?```"
SCORE_DIRECT = -0.1  # reasoning_type == direct
SCORE_REPETITION = -0.3  # 'repetition' flag
SCORE_INCOMPLETE = -0.2  # 'incomplete' flag
# The seed clamps to [0, 1]; distill also rounds to SCORE_DECIMALS so that threshold comparisons
# are not decided by float noise (0.5 - 0.2 must compare equal to 0.3).
SCORE_DECIMALS = 6

# --- Minimum quality of every export (docs/sources/escalations.md#export-gate) --------------------

INSTRUCTION_MIN_QUALITY = 0.3

# --- Reasoning step details (`reasoning_steps[].action/content/reasoning`) ------------------------

# A step line `N. **Header**: explanation` (or `N. Header: explanation`, `N. Sentence.`) gives
#   content   = the header (bold markers dropped), else the whole step text;
#   reasoning = the explanation after the header's colon, else null;
#   action    = the header's first word, lower-cased, when it is in STEP_ACTION_VERBS (after
#               STEP_ACTION_ALIASES), else STEP_DEFAULT_ACTION.
STEP_HEADER = r"^\*{0,2}([^*:\n]{1,80}?)\*{0,2}\s*:\s*(.*)$"
STEP_ACTION_VERBS: tuple[str, ...] = (
    "identify", "trace", "check", "verify", "inspect", "read", "find", "locate", "reproduce",
    "isolate", "add", "mitigate", "fix", "replace", "remove", "rename", "install", "configure",
    "run", "test", "compare", "compute", "calculate", "count", "define", "write", "implement",
    "create", "update", "refactor", "measure", "estimate", "plan", "decide", "choose", "explain",
    "initialize", "handle", "use", "split", "merge", "sort", "search", "return", "log",
)  # fmt: skip
STEP_ACTION_ALIASES: dict[str, str] = {"add": "mitigate", "guard": "mitigate"}
STEP_DEFAULT_ACTION = "explain"

# --- Tool usage details (`tool_usage[]`) ----------------------------------------------------------

TOOL_PURPOSES: dict[str, str] = {
    "bash": "run shell commands",
    "python": "run or show Python code",
    "git": "inspect or change version control state",
    "npm": "manage JavaScript packages or scripts",
    "pip": "install Python packages",
    "cargo": "build or manage a Rust project",
    "curl": "make an HTTP request",
}
TOOL_INPUT_PATTERNS: dict[str, str] = {
    "bash": "fenced ```bash block of commands",
    "python": "fenced ```python block",
    "git": "git <subcommand> [args]",
    "npm": "npm <command> [package]",
    "pip": "pip install <package>",
    "cargo": "cargo <command>",
    "curl": "curl [options] <url>",
}
TOOL_OUTPUT_HANDLING = "read the output and continue from it"

# --- SAM errors (`corrections.sam_errors`, docs/sources/escalations.md#sam-errors) ----------------

# SAM made an error when it made an attempt (non-blank `sam_attempt`) and one of these rules holds;
# the FIRST matching rule names `error_type`. Patterns run over Claude's answer, except
# `incomplete`, which compares lengths: the attempt has fewer than INCOMPLETE_MAX_LENGTH_RATIO times
# the answer's words and the answer has >= INCOMPLETE_MIN_ANSWER_STEPS numbered steps or code.
#   wrong_value      the answer corrects a value, limit or expiry (a TTL, timeout, quota, size,
#                    default, version: "should be 300, not 60", "won't handle TTL expiration")
#   factual          the answer says the attempt's claim is wrong
#   wrong_approach   the answer proposes a different approach
#   missing_context  the answer says the right answer depends on context SAM did not consider
#   incomplete       (length rule above)
# An attempt that met none of them, but whose example is a correction (reasoning_type
# `correction`, detected by the seed's indicators or pre-labelled), gets SAM_ERROR_FALLBACK.
SAM_ERROR_RULES: tuple[tuple[str, str], ...] = (
    (
        "wrong_value",
        r"(?i)\b(?:TTL|time-?to-?live|expir\w*|time-?outs?|limits?|quotas?|max(?:imum)?"
        r"|min(?:imum)?|defaults?|rate|size|port|version|retries|interval|duration|threshold)\b"
        r"[^.\n]{0,60}?\b(?:should be|must be|needs to be|has to be|is actually|defaults? to"
        r"|is set to|is only|is not|isn't)\b[^.\n]{0,40}?\d"
        r"|\b\d+(?:\.\d+)?[ \t]*(?:ms|s|secs?|seconds?|mins?|minutes?|h|hours?|days?|[KMG]B|%)?,?"
        r" not \d|\b(?:won't|will not|doesn't|does not|can't|cannot|never) (?:handle|support"
        r"|respect|enforce|expire|evict|apply)\b[^.\n]{0,40}?\b(?:TTL|time-?to-?live|expir\w*"
        r"|time-?outs?|limits?|quotas?)",
    ),
    (
        "factual",
        r"(?i)\b(?:that's (?:not|in)correct|that is (?:not|in)correct|is incorrect|is wrong"
        r"|not true|a (?:common )?misconception|is actually|are actually|in fact"
        r"|the correct \w+(?: \w+)? is)\b|\bactually,",
    ),
    (
        "wrong_approach",
        r"(?i)\b(?:a better (?:approach|way|option)|the (?:right|correct|proper) (?:approach|way)"
        r"|instead of|rather than|hides (?:a|the)|don't (?:just )?(?:ignore|swallow|pass))\b",
    ),
    (
        "missing_context",
        r"(?i)\b(?:it depends on|depends on (?:your|the|whether)|without (?:knowing|seeing)"
        r"|in your (?:case|setup|project))\b",
    ),
)
INCOMPLETE_ERROR = "incomplete"
INCOMPLETE_MAX_LENGTH_RATIO = 0.25
INCOMPLETE_MIN_ANSWER_STEPS = 2
SAM_ERROR_FALLBACK = "unspecified"
SAM_ERROR_TYPES: tuple[str, ...] = (
    *(t for t, _ in SAM_ERROR_RULES),
    INCOMPLETE_ERROR,
    SAM_ERROR_FALLBACK,
)
# what_was_wrong: the first sentence of the answer matching the error's rule; for `incomplete` and
# the fallback (no sentence to quote) this description.
SAM_ERROR_DESCRIPTIONS: dict[str, str] = {
    "incomplete": "Only addressed part of the problem: the answer covers steps the attempt lacks",
    "unspecified": "The answer corrects the attempt",
}
# what_sam_said: the attempt's last sentence (where its advice lands); correct_answer: the
# answer's first paragraph; both capped at SAM_ERROR_TEXT_MAX_CHARS characters.
SENTENCE = r"(?s)\S.*?(?:[.!?](?:\s+|\z)|\n\s*\n|\z)"
# what_was_wrong quotes the run of SENTENCE_CHARS (no line break, no `.!?` before a space)
# around the rule's first match in the answer.
SENTENCE_CHARS = r"(?:[^.!?\n]|[.!?][^\s.!?])"
SAM_ERROR_TEXT_MAX_CHARS = 400

# improvements: for an example with a SAM error, each rule whose answer pattern matches (and whose
# attempt pattern does not, when given) adds its text, in this order.
IMPROVEMENT_RULES: tuple[tuple[str, str, str | None], ...] = (
    (
        "Explain why the problem occurs",
        r"(?i)\b(?:occurs when|happens when|because|the reason|is caused by)\b",
        r"(?i)\b(?:because|occurs when|happens when|the reason)\b",
    ),
    ("Work through it step by step", r"(?m)^[ \t]*(?:\d+[.)]|Step[ \t]+\d+[:.])[ \t]+\S", None),
    (
        "Show multiple solution patterns",
        r"(?i)\b(?:several|multiple|different) (?:patterns|ways|options|approaches|solutions)\b",
        None,
    ),
    (
        "Address the root cause, not just the symptom",
        r"(?i)\broot cause\b|\bband-aid\b|\bsymptoms?\b",
        None,
    ),
    ("Include working code", r"```", r"```"),
)

# --- Principles (`principles[]`, docs/sources/escalations.md#principles) --------------------------

# Sentences of the answer's prose (code blocks removed, list markers and bold dropped) that state
# a generalizable rule, as (kind, pattern, importance); a sentence takes the first kind matching.
#   rule         imperative with always/never/avoid/prefer/make sure/don't
#   conditional  "When/Whenever/If <situation>, <imperative or rule>"
# Plus one canonical principle when the answer follows the root-cause pattern (it names the root
# cause, or a guard as a band-aid / a symptom): ROOT_CAUSE_PRINCIPLE, importance 0.9.
# At most MAX_PRINCIPLES per example (root cause first, then the sentence-start candidates in text
# order, then the should/must ones); context = the query's first line, capped at
# PRINCIPLE_CONTEXT_MAX_CHARS.
PRINCIPLE_RULES: tuple[tuple[str, str, float], ...] = (
    (
        "rule",
        r"^(?:Always|Never|Avoid|Prefer|Make sure|Don't|Do not)\b|\b(?:should always|should never"
        r"|must always|must never)\b",
        0.8,
    ),
    ("conditional", r"^(?:When|Whenever|If) [^,\n]{3,80}, \S", 0.7),
)
# Candidate sentences are found with two regexes over the prose (one pass each, so only candidates
# are judged): a sentence (SENTENCE_CHARS) starting with a capitalised rule/conditional word after
# a line start or a space, optionally behind a list marker or bold; and a sentence holding
# "should/must always/never".
PRINCIPLE_START_CANDIDATE = (
    r"(?m)(?:^|[.!?]?[ \t]+)[ \t]*(?:[-*][ \t]+|\d+[.)][ \t]+)?(?:\*\*)?"
    r"(?:Always|Never|Avoid|Prefer|Make sure|Don't|Do not|When|Whenever|If)\b"
    r"(?:[^.!?\n]|[.!?][^\s.!?])*[.!?]?"
)
PRINCIPLE_MID_CANDIDATE = (
    r"(?:[^.!?\n]|[.!?][^\s.!?])*\b(?:should always|should never|must always|must never)\b"
    r"(?:[^.!?\n]|[.!?][^\s.!?])*[.!?]?"
)
ROOT_CAUSE_PATTERN = r"(?i)\broot cause\b|\bband-aid\b|\bnot just (?:the |a )?symptom"
ROOT_CAUSE_PRINCIPLE = "When debugging, identify the root cause rather than just fixing symptoms"
ROOT_CAUSE_IMPORTANCE = 0.9
PRINCIPLE_CLEANUP = r"^[.!?]?\s*(?:(?:[-*]|\d+[.)])[ \t]+)?|\*\*"
PRINCIPLE_MIN_CHARS = 20
MAX_PRINCIPLES = 3
PRINCIPLE_CONTEXT_MAX_CHARS = 120

# --- The flags the seed could not compute offline -------------------------------------------------

# outdated: the answer pins its facts to a time or version that will age.
OUTDATED_INDICATORS: tuple[str, ...] = (
    r"(?i)\bas of (?:my (?:last|knowledge)|(?:19|20)\d{2}|today|now|this writing)\b",
    r"(?i)\b(?:at the time of writing|knowledge cutoff|the latest (?:version|release) is)\b",
    r"(?i)\b(?:is|was|has been) deprecated\b|\bcurrently (?:the|in) (?:latest|beta|preview)\b",
)
# hallucination_risk: specific, checkable claims (statistics, studies, dates of events, quotes).
HALLUCINATION_INDICATORS: tuple[str, ...] = (
    r"(?i)\b(?:according to|studies (?:show|have shown|suggest)|research (?:shows|suggests))\b",
    r"\b\d+(?:\.\d+)?\s?%",
    r"(?i)\b(?:in|since) (?:1[89]|20)\d{2}\b",
    r"(?i)\b(?:invented|founded|discovered|published) (?:by|in)\b",
)

# --- Junk captures (distill's flags beyond the seed's ten) ----------------------------------------

# Captures from a real assistant log replies that are not answers. Flags, in QUALITY_FLAGS order
# after the seed's ten:
#   not_an_answer  the answer-ness model below names a reason (column `answer_rejection`)
#   off_topic      the query has >= OFF_TOPIC_MIN_QUERY_TERMS content terms and the reply shares
#                  fewer than OFF_TOPIC_MAX_OVERLAP of them (lexical overlap, see below); not for
#                  OFF_TOPIC_EXEMPT_DOMAINS (a poem need not repeat its prompt's words), and not
#                  when the reply has the structure of an answer (more than OFF_TOPIC_MAX_EVIDENCE
#                  points of answer evidence, see answer-ness: code or steps need not repeat the
#                  query's words either)
# Content terms of the query: lower-cased words of >= 4 letters/digits (RELEVANCE_TERM) not in
# RELEVANCE_STOPWORDS, truncated to their first RELEVANCE_STEM_CHARS characters (a crude stem, so
# "fixing"/"fixed" meet), unique; a term is shared when the lower-cased reply contains it.
JUNK_FLAGS: tuple[str, ...] = ("not_an_answer", "off_topic")
# An acknowledgement: nothing but ACK_WORDS (one or more, separated by spaces/punctuation).
ACK_WORDS = (
    r"ok(?:ay)?|k|thanks?(?: you)?(?: so much)?|thx|ty|got it|sure|yes|yep|no|nope|cool|great"
    r"|nice|perfect|awesome|lol|hmm+|done|noted|understood|will do|sounds good"
)
ACKNOWLEDGEMENT = rf"(?i)^\s*(?:{ACK_WORDS})(?:[\s,.!]+(?:{ACK_WORDS}))*[\s.!]*$"
ERROR_PAGE_START = r"(?i)^\s*(?:<!doctype html|<html|\{\s*\"error\"\s*:)"
ERROR_PAGE_MAX_OVERLAP = 0.34
ERROR_PAGE_INDICATORS: tuple[str, ...] = (
    r"(?i)\b(?:404 (?:- )?not found|500 internal server error|502 bad gateway"
    r"|503 service (?:temporarily )?unavailable|504 gateway time-?out)\b",
    r"(?i)\b(?:rate limit (?:exceeded|reached)|too many requests|request timed out"
    r"|internal error occurred|upstream connect error)\b",
)

# --- Answer-ness: does `claude_response` answer `query`? (distill) ------------------------------

# A logger that records the user's prompt history stores the user's NEXT message as the "answer":
# requests to the assistant, wishes, bug reports, pasted logs and commands, acknowledgements. The
# model weighs two kinds of evidence, each a vectorized measure of the reply:
#   role cues        who the reply's opening (its first ANSWER_HEAD_CHARS characters) or its lines
#                    sound like: ANSWER_ROLE_CUES (kind, pattern), LOG_LINE, COMMAND_LINE, ...
#   answer evidence  points (column-free expression `answer_evidence`): explanation
#                    (EXPLANATION_MARKERS matches, at most EVIDENCE_MAX_EXPLAIN), guidance to the
#                    reader (GUIDANCE_MARKERS, at most EVIDENCE_MAX_GUIDE), >= 2 ordered steps
#                    (EVIDENCE_STEPS), a fenced code block (EVIDENCE_CODE), prose of at least
#                    EVIDENCE_LONG_PROSE_WORDS words (1) and the query's terms (overlap at least
#                    EVIDENCE_OVERLAP: 1)
# A reply is rejected (flag `not_an_answer`, `answer_rejection` = the kind, export drop reason
# `not_an_answer:<kind>`) for the first of ANSWER_REJECTIONS whose condition holds:
#   acknowledgement  ACKNOWLEDGEMENT (the whole reply)
#   error_page       ERROR_PAGE_START, or an ERROR_PAGE_INDICATORS cue the query does not contain
#                    while the reply shares fewer than ERROR_PAGE_MAX_OVERLAP of the query's terms
#   dont_know        the reply opens with DONT_KNOW and never goes on with HEDGE_CONTINUATION
#   question_back    no code; at least QUESTION_BACK_MIN_SHARE of its prose's sentences are
#                    questions, and its last one is
#   pasted_log       at least PASTED_MIN_LINES non-blank lines, at least PASTED_MIN_SHARE of them
#                    LOG_LINE
#   shell_command    no fenced code; at least PASTED_MIN_SHARE of its non-blank lines COMMAND_LINE
#   user_request, user_wish, bug_report
#                    the kind's ANSWER_ROLE_CUES pattern matches the opening
# and, for every kind but the first two, the reply has at most MAX_EVIDENCE[kind] points; for
# the kinds in CODE_IS_PASTED_FOR a fenced block earns no points (a request or bug report that
# opens the reply brings its code or error along). Lines are counted without fence lines. A
# reviewer's approval overturns a rejection (see the export gate).
ANSWER_HEAD_CHARS = 160
# Interjections a user's message may open with before the request itself.
_OPENING = (
    r"(?i)^\W*(?:(?:ok(?:ay)?|yes|yeah|yep|sure|great|cool|good|alright|now|so|and|also|then"
    r"|hmm+|no|nope|hey|hi|well|ugh|wait|thanks?)\b[\s,.!]*)*"
)
ANSWER_ROLE_CUES: tuple[tuple[str, str], ...] = (
    (
        "user_request",
        _OPENING + r"(?:(?:can|could|would|will|won't|can't) (?:you|u)\b|please\b|pls\b|plz\b"
        r"|i (?:want|need|'d like|would like) you\b|go ahead\b"
        r"|let'?s (?:do|go|try|ship|continue|move on|just|switch|keep|finish)\b"
        r"|do (?:it|that|this|the same)\b|just (?:do|fix|make|use|run|go|add|change|remove|push"
        r"|commit|ship|finish)\b|try (?:again|harder)\b|keep going\b|continue\b"
        r"|proceed\b|carry on\b|(?:fix|change|remove|update|revert|undo|redo|rewrite|implement"
        r"|build|ship|finish|commit|push|deploy|test|rerun|restart) (?:it|this|that|them"
        r"|everything|all)\b|make (?:it|this|that|them) \w+|stop (?:asking|doing|prompting"
        r"|confirming)\b|don'?t (?:ask|stop|bother|confirm)\b|(?:fewer|less|no more)"
        r" (?:confirmations?|questions|prompts)\b|same (?:for|with) \w+"
        r"|now (?:do|add|make|fix|run|change|try)\b|again\b|hello\b|yo\b)",
    ),
    (
        "user_wish",
        r"(?i)\b(?:i (?:really )?(?:want|wish|need) (?:it|this|the \w+|sam|us|to (?:be able"
        r"|have|see|get))|i'?d (?:really )?(?:like|love) (?:it|this|the|to|a|an|sam)"
        r"|(?:it|sam) (?:should|needs to|must) (?:also|be able to|always|never|remember|show"
        r"|support|sync|let me|have an?|open|stay)"
        r"|(?:can|could) we (?:add|have|make|get|support)|we (?:need|should) (?:to )?(?:add|have"
        r"|make|support)|feature request|would be (?:nice|great|cool|awesome|good) (?:if|to)"
        r"|what if (?:it|we|sam)|it would be (?:nice|great|cool|awesome|better))\b",
    ),
    (
        "bug_report",
        r"(?i)(?:\b(?:it|this|that|sam|the (?:app|build|page|server|script|tests?|thing|button|ui"
        r"|window|cli)) (?:still |now |just |keeps? |always )?(?:crash(?:es|ed|ing)?"
        r"|fail(?:s|ed|ing)?|break(?:s|ing)?|broke|hangs?|hung|freez(?:es|ing)|froze|won't"
        r"|doesn't|does not|didn't|did not|isn't|is not|throws|threw|errors? out)"
        r"|\bi(?:'m| am) (?:still )?(?:getting|seeing|stuck)"
        r"|\bi (?:still |now )?(?:get|got|see|saw|keep getting) (?:this|an|the|a|same|that)\b"
        r"|\b(?:still|again) (?:broken|failing|not working|crashing|the same|getting|seeing"
        r"|having)\b|\bnot working\b"
        r"|\bnothing happens\b|\bsame (?:error|problem|issue|thing|crash)\b"
        r"|\b(?:there's|there is) (?:a|still a) bug\b)",
    ),
)
DONT_KNOW = (
    r"(?i)^\W*(?:(?:i|we)\s+)?(?:(?:really |honestly |just )?(?:don'?t|do not) know"
    r"|have no (?:idea|clue)|no (?:idea|clue)|not sure|idk|dunno|can'?t (?:say|tell)"
    r"|cannot (?:say|tell)|i'?m not sure|i am not sure|i'?m unsure|beats me)\b"
)
HEDGE_CONTINUATION = (
    r"(?i)\b(?:but|though|however|although|i (?:think|believe|suspect|guess)|probably|likely"
    r"|my guess|it (?:may|might|could)|could be|usually|typically|in most|one option"
    r"|you (?:can|could|might))\b"
)
# Sentences are counted by their ends (SENTENCE_END; trailing text without one is one more
# sentence, UNTERMINATED_END), questions by QUESTION_END: counts, no list per reply.
SENTENCE_END = r"[.!?]+(?:\s|$)"
QUESTION_END = r"\?[.!?]*(?:\s|$)"
UNTERMINATED_END = r"[^.!?\s]\s*$"
QUESTION_BACK_MIN_SHARE = 0.5
# A pasted log / trace / path line, and a shell command line (searched line by line).
LOG_LINE = (
    r"(?m)^[ \t]*(?:Traceback \(most recent call last\)|File \"[^\"\n]+\", line \d+"
    r"|at [\w.$<>/]+[(:]|[\w.]*(?:Error|Exception|Warning)\b[:(]?"
    r"|\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}"
    r"|\[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|CRITICAL|TRACE)\b|npm (?:ERR!|WARN)"
    r"|error(?:\[E\d+\])?:|warning:|fatal:|panic:|Caused by:|\$ |> |~?/[\w.@-]+/[\w./@-]+"
    r"|[A-Z]:\\|\.{3} \d+ more|\^+[ \t]*$|-->|\d+[ \t]+\||\|[ \t]*$|\|[ \t]+[-^]+)"
)
COMMAND_LINE = (
    r"(?m)^[ \t]*(?:\$[ \t]*)?(?:sudo[ \t]+)?(?:cd|ls|git|npm|npx|yarn|pnpm|pip3?|python3?|node"
    r"|brew|docker|kubectl|make|cargo|curl|wget|export|source|chmod|chown|rm|mv|cp|mkdir|cat"
    r"|tail|head|grep|ssh|scp|open|uv|poetry|go|swift|xcodebuild|killall|ps|kill|pytest|ruff"
    r"|echo|touch|sed|awk|find|tar)[ \t]+\S"
)
NONBLANK_LINE = r"(?m)^[ \t]*\S"
FENCE_LINE = r"(?m)^[ \t]*```"
PASTED_MIN_LINES = 2
PASTED_MIN_SHARE = 0.5
EXPLANATION_MARKERS = (
    r"(?i)\b(?:because|since|so that|which means|this means|that means|means that|the reason"
    r"|that's why|this is why|for example|e\.g\.|i\.e\.|in other words|returns?|causes?"
    r"|caused by|happens (?:when|because)|occurs when|is used (?:to|for)|allows?|lets you"
    r"|refers to|stands for|works by|instead|is (?:a|an|the)|are (?:a|an|the)|depends on"
    r"|otherwise|this (?:way|ensures|avoids|makes))\b"
)
GUIDANCE_MARKERS = (
    r"(?i)\b(?:you can|you could|you should|you'll (?:need|want)|you need to|you might|you may"
    r"|you want to|to (?:fix|do|avoid|get|make|use|enable|check|change) (?:this|that|it)"
    r"|try (?:using|adding|running|setting)|make sure|be sure to|here's|here is)\b"
)
EVIDENCE_MAX_EXPLAIN = 2
EVIDENCE_MAX_GUIDE = 2
EVIDENCE_STEPS = 2
EVIDENCE_CODE = 2
EVIDENCE_LONG_PROSE_WORDS = 60
EVIDENCE_OVERLAP = 0.5
# The most answer evidence a reply may have and still be rejected, per kind.
MAX_EVIDENCE: dict[str, int] = {
    "dont_know": 1,
    "question_back": 1,
    "pasted_log": 0,
    "shell_command": 0,
    "user_request": 1,
    "user_wish": 1,
    "bug_report": 1,
}
CODE_IS_PASTED_FOR: tuple[str, ...] = ("user_request", "user_wish", "bug_report")
ANSWER_REJECTIONS: tuple[str, ...] = (
    "acknowledgement",
    "error_page",
    "dont_know",
    "question_back",
    "pasted_log",
    "shell_command",
    "user_request",
    "user_wish",
    "bug_report",
)
RELEVANCE_TERM = r"[a-z0-9_]{4,}"
RELEVANCE_STEM_CHARS = 5
RELEVANCE_STOPWORDS: tuple[str, ...] = (
    "about", "after", "also", "been", "before", "being", "could", "does", "doing", "from",
    "have", "here", "into", "just", "know", "like", "make", "more", "need", "only", "other",
    "please", "should", "some", "such", "than", "that", "their", "them", "then", "there",
    "these", "they", "thing", "this", "want", "what", "when", "where", "which", "while", "will",
    "with", "would", "your", "yours", "thanks", "help", "getting", "work", "works", "using",
)  # fmt: skip
OFF_TOPIC_MIN_QUERY_TERMS = 3
OFF_TOPIC_MAX_OVERLAP = 0.15
OFF_TOPIC_EXEMPT_DOMAINS: tuple[str, ...] = ("creative",)
OFF_TOPIC_MAX_EVIDENCE = 1

# --- Export gate and training readiness (docs/sources/escalations.md#export-gate) -----------------

# An example leaves EVERY export (instruction, cot, dpo, correction) for the first reason that
# applies, in this order:
#   rejected          a reviewer rejected it (human_reviewed == -1; CLI decisions also remove it
#                     from the release through the global review exclusion table)
#   flag_<flag>       it carries one of EXPORT_EXCLUDED_FLAGS (not_an_answer: see below)
#   not_an_answer:<kind>  the answer-ness model rejected the reply (`answer_rejection`); a
#                     reviewer's approval overturns it, as it does the other REVIEWABLE_FLAGS
#   below_min_quality quality_score <= INSTRUCTION_MIN_QUALITY (exclusive: the filter keeps
#                     examples ABOVE the minimum, so "I don't know" at exactly 0.3 stays out)
#   needs_approval    its export format is in APPROVAL_REQUIRED_FORMATS and it is not approved
# Then each format has its own condition (`not_<format>` when unmet):
#   instruction  always
#   cot          >= COT_EXPORT_MIN_STEPS reasoning steps
#   preference   a SAM error was found (the attempt was wrong) and the attempt is not blank
#   correction   same as preference
EXPORT_EXCLUDED_FLAGS: tuple[str, ...] = ("refusal", *JUNK_FLAGS)
# Flags a reviewer's approval overturns (junk is a judgement; a refusal is not).
REVIEWABLE_FLAGS: tuple[str, ...] = JUNK_FLAGS
COT_EXPORT_MIN_STEPS = 2
# No format waits for approval by default: review removes (reject) rather than admits.
APPROVAL_REQUIRED_FORMATS: tuple[str, ...] = ()
# training_ready = 1 when the example passes the gate for at least one format.
# training_format (the seed's single best use): preference for legacy preference pairs, else
# correction when SAM erred, else cot when it has COT_EXPORT_MIN_STEPS steps, else instruction.

# --- Stats (`distill stats escalations`, docs/sources/escalations.md#stats) -----------------------

# Quality tier: the first (tier, minimum score) whose minimum the score reaches.
QUALITY_TIERS: tuple[tuple[str, float], ...] = (("high", 0.7), ("medium", 0.4), ("low", 0.0))
REVIEW_STATES: dict[int, str] = {1: "approved", 0: "pending", -1: "rejected"}

# --- Optional LLM extractor (off by default; DISTILL_LLM_BASE_URL / _MODEL) -----------------------

# Sampling of the extraction requests: deterministic answers, enough room for the JSON.
LLM_TEMPERATURE = 0.0
LLM_MAX_TOKENS = 1500
# The instruction sent before each example; the answer must be one JSON object of these fields.
LLM_SYSTEM_PROMPT = (
    "You extract training data from an escalation: a user's query, a small model's (SAM's) "
    "attempt and a large model's answer. Reply with one JSON object and nothing else, with keys "
    '"reasoning_steps": [{"step_num": int, "action": verb, "content": str, "reasoning": str}], '
    '"corrections": null or {"sam_errors": [{"error_type": one of incomplete, wrong_value, '
    'factual, missing_context, wrong_approach, "what_sam_said": str, "what_was_wrong": str, '
    '"correct_answer": str}], "improvements": [str]}, '
    '"principles": [{"principle": str, "context": str, "importance": number 0..1}], '
    '"not_an_answer": null when claude_response answers the query, else why not, one of '
    + ", ".join(ANSWER_REJECTIONS)
    + " (the log may have stored the user's next message, a pasted log or an acknowledgement "
    "as the answer)."
)
