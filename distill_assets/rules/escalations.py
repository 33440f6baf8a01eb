r"""Seed 000 rules for escalations: reasoning indicators, classification, quality flags and score.

Source: `seeds/000` ("SAM Distillation Data Format Specification"), sections "Reasoning Extraction
Patterns", "Quality Scoring Algorithm" and "Quality Flags". Everything here is data applied as
vectorized Polars expressions (Rust `regex` crate) by `defs/escalations/examples.py`.

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

# --- Reasoning extraction patterns (seed 000, verbatim except the noted `\b`) --------------------

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
    r"(?i)\bI(?:'m| am) not (?:entirely |completely |100% )?(?:sure|certain)\b",
    r"(?i)\bI (?:don't|do not) (?:know|have (?:enough|reliable) information)\b",
    r"(?i)\b(?:I|we) (?:can't|cannot) (?:be certain|know for sure|predict)\b",
    r"(?i)\bI (?:might|may|could) be wrong\b",
    r"(?i)\b(?:it's|it is) (?:hard|difficult|impossible) to (?:say|know|predict)\b",
)
REFLECTION_INDICATORS: tuple[str, ...] = (
    r"(?i)\b(?:let me|I should|I need to) (?:reconsider|double-check|re-check|re-examine)\b",
    r"(?i)\bon (?:second thought|reflection)\b",
    r"(?i)\bI (?:was|am) (?:wrong|mistaken)\b",
    r"(?i)\bmy (?:earlier|previous|first) (?:answer|assumption|reasoning)\b",
)

# --- Reasoning type (seed 000 "Reasoning Types") ------------------------------------------------

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
# Sub-tasks in a query: question marks plus list-item lines.
QUERY_SUBTASK = r"(?m)\?|^[ \t]*(?:\d+[.)]|[-*])[ \t]+\S"

# --- Classification when the producer did not pre-label it --------------------------------------

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
# answer (at most COMPLEXITY_MAX_LENGTH_POINTS), plus one for each of: >= 3 numbered steps,
# >= 6 numbered steps, a fenced code block, a non-empty query context, a query of more than
# COMPLEXITY_LONG_QUERY_WORDS words. Clamped to [1, 10].
COMPLEXITY_WORDS_PER_POINT = 150
COMPLEXITY_MAX_LENGTH_POINTS = 4
COMPLEXITY_STEP_THRESHOLDS: tuple[int, ...] = (3, 6)
COMPLEXITY_LONG_QUERY_WORDS = 40

# --- Quality flags (seed 000 "Quality Flags") -----------------------------------------------------

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

# --- Quality score (seed 000 "Quality Scoring Algorithm") ---------------------------------------

SCORE_BASE = 0.5
SCORE_REASONING_STEPS = 0.1  # >= SCORE_MIN_REASONING_STEPS numbered steps
SCORE_MIN_REASONING_STEPS = 2
SCORE_CORRECTION = 0.15  # corrections.sam_errors non-empty (reasoning_type == correction)
SCORE_PRINCIPLES = 0.1  # >= 1 extracted principle: needs an LLM, always 0 offline
SCORE_COMPLEXITY = 0.05  # complexity >= SCORE_MIN_COMPLEXITY
SCORE_MIN_COMPLEXITY = 5
SCORE_SHORT_RESPONSE = -0.2  # claude_response shorter than SCORE_SHORT_RESPONSE_CHARS characters
SCORE_SHORT_RESPONSE_CHARS = 100
SCORE_DIRECT = -0.1  # reasoning_type == direct
SCORE_REPETITION = -0.3  # 'repetition' flag
SCORE_INCOMPLETE = -0.2  # 'incomplete' flag
# The seed clamps to [0, 1]; distill also rounds to SCORE_DECIMALS so that threshold comparisons
# are not decided by float noise (0.5 - 0.2 must compare equal to 0.3).
SCORE_DECIMALS = 6

# --- Instruction export (seed 000 "Training Export Formats" 1, task 1.1.6 quality filter) -------

# Rows leave the instruction feed for the first reason that applies, in this order:
#   flag_<flag>        the example carries one of INSTRUCTION_EXCLUDED_FLAGS
#   below_min_quality  quality_score < INSTRUCTION_MIN_QUALITY
INSTRUCTION_EXCLUDED_FLAGS: tuple[str, ...] = ("refusal",)
INSTRUCTION_MIN_QUALITY = 0.3
