"""Published row contracts: one pydantic model per release config, and which tables feed it.

Every published row carries `id` (stable content hash), `source`, `source_ref` (file + line or
run/turn/episode id), `quality_score` (0..1) and `metadata` (a JSON string of source-specific
fields). Source tables that feed a config ("feed tables") hold these columns, the config's core
columns (or, for `sft` and `dpo`, the simpler `FEED_CORE_SCHEMAS` columns curation reshapes),
and two internal columns the curation layer uses and drops before publishing:
`split_group` (the group no split may cut: task, session, scenario, player) and `event_time`
(unix seconds of the underlying record; the earliest wins ties in dedup).

Removal by subject: a feed table may also hold the optional internal column `subject`, the entity
whose removal removes the row (a telemetry `player_key`, an escalation example id). A source room
that must take rows out of every release after they were ingested (a player's deletion request, a
reviewer's rejection) writes a global lake table listed in `EXCLUSION_TABLES`, with
`EXCLUSION_SCHEMA` columns; curation drops every feed row whose `(source, subject)` it lists and
counts it under the listed `reason`.
"""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel, Field, create_model

from distill_assets.rules import action_tokens


class Message(BaseModel):
    """One chat message."""

    role: str = Field(description="system | user | assistant | tool")
    content: str


class PublishedRow(BaseModel):
    """Columns every config has."""

    id: str = Field(description="sha256 of the row's content fields, first 16 hex digits")
    source: str = Field(description="traces | escalations | revisions | telemetry")
    source_ref: str = Field(description="where in raw data the row came from")
    quality_score: float = Field(ge=0.0, le=1.0)
    metadata: str = Field(description="JSON object of source-specific fields")


class SftRow(PublishedRow):
    """`sft`: TRL's conversational prompt-completion form, so SFTTrainer trains on the target only.

    `prompt` is the messages before the target, `completion` the target assistant turn (for traces
    the tool-call JSON, docs/sources/traces.md#samples). Feed tables hold the whole `messages` list
    (`FEED_CORE_SCHEMAS`); `prompt + completion` gives it back.
    """

    prompt: list[Message]
    completion: list[Message]


class ToolFunction(BaseModel):
    """The function a tool call invokes; `arguments` is a JSON object (chat templates need one).

    In the lake it is the object's JSON text; published it is an Arrow JSON column
    (`JSON_FIELDS`), which `datasets` loads as a dict.
    """

    name: str
    arguments: dict[str, object]


class ToolCall(BaseModel):
    """One tool call of an assistant message."""

    id: str
    type: str = Field(description="always `function`")
    function: ToolFunction


class ToolMessage(BaseModel):
    """A chat message in the tool-calling format.

    Assistant messages carry `tool_calls` and content `""` (never null: several chat templates
    fail on it), `tool` messages carry the `tool_call_id` they answer. Only the first message is a
    `system` one: the agent's DRIVER NOTEs are user messages.
    """

    role: str = Field(description="system | user | assistant | tool")
    content: str
    tool_calls: list[ToolCall] | None
    tool_call_id: str | None


class SftToolsRow(PublishedRow):
    """`sft_tools`: trace steps in TRL/OpenAI tool-calling form.

    `tools` holds the tools' function schemas as JSON objects (Arrow JSON: `datasets` loads a list
    of dicts), so a row goes straight to `apply_chat_template(row["messages"], tools=row["tools"])`.
    """

    messages: list[ToolMessage]
    tools: list[dict[str, object]]


class DpoRow(PublishedRow):
    """`dpo`: a preference pair in TRL's conversational form, so the chat template is applied.

    `prompt` is one user message, `chosen`/`rejected` one assistant message each. Feed tables
    hold the plain strings (`FEED_CORE_SCHEMAS`).
    """

    prompt: list[Message]
    chosen: list[Message]
    rejected: list[Message]


class InstructionRow(PublishedRow):
    """`instruction`: Alpaca-style instruction/input/output.

    See docs/sources/escalations.md#export-formats, format 1.
    """

    instruction: str
    input: str
    output: str


class CotRow(PublishedRow):
    """`cot`: an instruction with its reasoning (README.md#what-you-get).

    Built as in docs/sources/escalations.md#export-formats (format 2) and
    docs/sources/telemetry.md#reasoning.
    """

    instruction: str
    input: str
    output: str
    thought_process: list[str]
    conclusion: str
    outcome: str


class CorrectionRow(PublishedRow):
    """`correction`: error-recovery training.

    Worded as in docs/sources/escalations.md#export-formats, format 4.
    """

    instruction: str
    input: str
    output: str


GameStateValues = create_model(
    "GameStateValues",
    __doc__="The numbers of `game_state` at `rules.action_tokens.GAME_STATE_KEYS` (null: absent).",
    **{key: (float | None, None) for key in action_tokens.GAME_STATE_KEYS},
)
SkillStateValues = create_model(
    "SkillStateValues",
    __doc__="The numbers of `skill_state` at `rules.action_tokens.SKILL_STATE_KEYS`.",
    **{key: (float | None, None) for key in action_tokens.SKILL_STATE_KEYS},
)


class RldsObservation(BaseModel):
    """What the player saw at a step; `game_state` and `skill_state` are JSON object strings."""

    game_state: str
    game_state_values: GameStateValues  # type: ignore[valid-type]
    inventory: list[str]
    skill_state: str
    skill_state_values: SkillStateValues  # type: ignore[valid-type]
    natural_language_instruction: str


class RldsAction(BaseModel):
    """What the player did; `action_details` is a JSON object string of continuous values."""

    action_type: str = Field(description="empty on the final (is_last) step")
    action_details: str
    action_tokens: list[int] = Field(
        description=f"{action_tokens.TOKENS_PER_STEP} tokens, entry i for axis i, each in "
        f"[0, {action_tokens.VOCAB_SIZE}) or the pad {action_tokens.PAD_TOKEN} (axis unused)",
        min_length=action_tokens.TOKENS_PER_STEP,
        max_length=action_tokens.TOKENS_PER_STEP,
    )


class RldsStep(BaseModel):
    """One step of an episode (RLDS semantics: the `is_last` step's action/reward are invalid)."""

    step_index: int
    is_first: bool
    is_last: bool
    is_terminal: bool
    observation: RldsObservation
    action: RldsAction
    reward: float
    discount: float


class RldsRow(PublishedRow):
    """`rlds`: one episode with its steps in order (docs/sources/telemetry.md#episodes)."""

    episode_id: str
    task_description: str
    success: bool
    steps: list[RldsStep]


COMMON_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "source": pl.String(),
    "source_ref": pl.String(),
    "quality_score": pl.Float64(),
    "metadata": pl.String(),
}
INTERNAL_SCHEMA: dict[str, pl.DataType] = {"split_group": pl.String(), "event_time": pl.Float64()}
SUBJECT_COLUMN = "subject"
EXCLUSION_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),
    SUBJECT_COLUMN: pl.String(),
    "reason": pl.String(),
}
# global lake tables (source, table) of EXCLUSION_SCHEMA whose subjects leave every config
EXCLUSION_TABLES: list[tuple[str, str]] = [
    # deletion requests and missing consent (defs/telemetry/privacy.py)
    ("telemetry", "exclusions"),
    # examples a reviewer rejected (defs/escalations/review.py)
    ("escalations", "review_exclusions"),
    # pairs with an excluded player (defs/telemetry/pairs.py)
    ("telemetry", "pair_exclusions"),
    # telemetry rows a Witness rejected, subject = the row id (defs/telemetry/witness.py)
    ("telemetry", "witness_exclusions"),
]
MESSAGES_DTYPE = pl.List(pl.Struct({"role": pl.String(), "content": pl.String()}))
TOOL_MESSAGES_DTYPE = pl.List(
    pl.Struct(
        {
            "role": pl.String(),
            "content": pl.String(),
            "tool_calls": pl.List(
                pl.Struct(
                    {
                        "id": pl.String(),
                        "type": pl.String(),
                        "function": pl.Struct({"name": pl.String(), "arguments": pl.String()}),
                    }
                )
            ),
            "tool_call_id": pl.String(),
        }
    )
)
RLDS_STEPS_DTYPE = pl.List(
    pl.Struct(
        {
            "step_index": pl.Int64(),
            "is_first": pl.Boolean(),
            "is_last": pl.Boolean(),
            "is_terminal": pl.Boolean(),
            "observation": pl.Struct(
                {
                    "game_state": pl.String(),
                    "game_state_values": pl.Struct(
                        {key: pl.Float64() for key in action_tokens.GAME_STATE_KEYS}
                    ),
                    "inventory": pl.List(pl.String()),
                    "skill_state": pl.String(),
                    "skill_state_values": pl.Struct(
                        {key: pl.Float64() for key in action_tokens.SKILL_STATE_KEYS}
                    ),
                    "natural_language_instruction": pl.String(),
                }
            ),
            "action": pl.Struct(
                {
                    "action_type": pl.String(),
                    "action_details": pl.String(),
                    "action_tokens": pl.List(pl.Int64()),
                }
            ),
            "reward": pl.Float64(),
            "discount": pl.Float64(),
        }
    )
)

CORE_SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "sft": {"prompt": MESSAGES_DTYPE, "completion": MESSAGES_DTYPE},
    "dpo": {"prompt": MESSAGES_DTYPE, "chosen": MESSAGES_DTYPE, "rejected": MESSAGES_DTYPE},
    "instruction": {"instruction": pl.String(), "input": pl.String(), "output": pl.String()},
    "sft_tools": {"messages": TOOL_MESSAGES_DTYPE, "tools": pl.List(pl.String())},
    "cot": {
        "instruction": pl.String(),
        "input": pl.String(),
        "output": pl.String(),
        "thought_process": pl.List(pl.String()),
        "conclusion": pl.String(),
        "outcome": pl.String(),
    },
    "correction": {"instruction": pl.String(), "input": pl.String(), "output": pl.String()},
    "rlds": {
        "episode_id": pl.String(),
        "task_description": pl.String(),
        "success": pl.Boolean(),
        "steps": RLDS_STEPS_DTYPE,
    },
}
# config -> the core columns its feed tables hold where they differ from the published ones;
# curation turns them into the published columns (defs/curation/shapes.py)
FEED_CORE_SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "sft": {"messages": MESSAGES_DTYPE},
    "dpo": {"prompt": pl.String(), "chosen": pl.String(), "rejected": pl.String()},
}
# config -> string fields (dotted path through struct fields; list levels are not named) that hold
# JSON object text in the lake and are published as Arrow JSON (`arrow.json`), which `datasets`
# (>= 4.7, its `Json` feature) loads as Python objects: chat templates need the tool-call arguments
# and the tool schemas as mappings, and a struct cannot hold arguments whose keys differ per tool.
JSON_FIELDS: dict[str, frozenset[str]] = {
    "sft_tools": frozenset({"messages.tool_calls.function.arguments", "tools"}),
}
ROW_MODELS: dict[str, type[PublishedRow]] = {
    "sft": SftRow,
    "dpo": DpoRow,
    "instruction": InstructionRow,
    "sft_tools": SftToolsRow,
    "cot": CotRow,
    "correction": CorrectionRow,
    "rlds": RldsRow,
}

# config -> the partitioned lake tables (source, table) whose rows it publishes
CONFIG_FEEDS: dict[str, list[tuple[str, str]]] = {
    "sft": [("traces", "sft_steps"), ("telemetry", "dialogues")],
    "dpo": [
        ("revisions", "revision_pairs"),
        ("escalations", "preference_pairs"),
        ("telemetry", "decision_pairs"),  # ghost replays + counterfactuals (issue 12)
        ("telemetry", "episode_pairs"),  # hard negative vs success, same task (issue 12)
    ],
    "instruction": [("escalations", "instruction_examples")],
    "sft_tools": [("traces", "sft_tool_steps")],
    "cot": [("escalations", "cot_examples"), ("telemetry", "reasoning")],
    "correction": [("escalations", "correction_examples")],
    "rlds": [("telemetry", "episodes")],
}


def published_schema(config: str) -> pl.Schema:
    """Return the exact published column order and types of a config."""
    return pl.Schema({**COMMON_SCHEMA, **CORE_SCHEMAS[config]})


def feed_schema(config: str) -> pl.Schema:
    """Return the columns a feed table of `config` must hold (feed core + common + internal)."""
    core = FEED_CORE_SCHEMAS.get(config, CORE_SCHEMAS[config])
    return pl.Schema({**COMMON_SCHEMA, **core, **INTERNAL_SCHEMA})
