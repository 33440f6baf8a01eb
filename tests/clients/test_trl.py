"""The release as TRL and transformers take it: every shipped chat template, SFTTrainer, DPOTrainer.

Run by `make test-clients` (the `clients` extra); `make test` never collects this folder. Data is
loaded with `load_dataset(path, config)` only (conftest.py), exactly as docs/consuming.md says.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from tests.clients.templates import supports_tools, template_names, template_text

pytestmark = pytest.mark.clients

# templates that render `arguments` by string concatenation (documented in the card with the
# one-line workaround); TRL's `<name>_training` variant of each renders the JSON object
STRING_ARGUMENT_TEMPLATES = {"deepseekv3"}
# templates that cannot render a plain text conversation with a system prompt, and why
NO_SYSTEM_ROLE = {"gemma", "gemma_training"}  # "System role not supported"
MULTIMODAL_CONTENT = {"llava_next", "llava_next_training"}  # content must be a list of blocks
TOOL_TEMPLATES = [n for n in template_names() if supports_tools(n)]
TEXT_TEMPLATES = [n for n in template_names() if n not in NO_SYSTEM_ROLE | MULTIMODAL_CONTENT]


def rows(dataset: object) -> list[dict]:
    """Return every row of every split of a loaded config."""
    return [row for split in dataset.values() for row in split]  # type: ignore[attr-defined]


def as_string_arguments(message: dict) -> dict:
    """Return a message with its tool calls' arguments as JSON text (the card's one-liner)."""
    calls = [
        {**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
        for c in message["tool_calls"] or []
    ]
    return {**message, "tool_calls": calls or None}


def double_encoded(rendered: str, row: dict) -> list[str]:
    """Return the argument keys of `row`'s tool calls that `rendered` shows as escaped JSON."""
    keys = {
        key
        for message in row["messages"]
        for call in message["tool_calls"] or []
        for key in call["function"]["arguments"]
    }
    return sorted(key for key in keys if f'\\"{key}\\"' in rendered)


def test_sft_tools_loads_json_objects(datasets_by_config: dict[str, object]) -> None:
    """Arguments and tools load as mappings; tool-call turns have content ""; one system turn."""
    loaded = rows(datasets_by_config["sft_tools"])
    assert loaded
    for row in loaded:
        assert all(isinstance(tool, dict) for tool in row["tools"])
        roles = [m["role"] for m in row["messages"]]
        assert roles[0] == "system" and "system" not in roles[1:]
        for message in row["messages"]:
            assert message["content"] is not None
            for call in message["tool_calls"] or []:
                assert isinstance(call["function"]["arguments"], dict)
                assert message["content"] == ""


@pytest.mark.parametrize("name", [n for n in TOOL_TEMPLATES if n not in STRING_ARGUMENT_TEMPLATES])
def test_every_tool_template_renders_every_sft_tools_row(
    name: str, datasets_by_config: dict[str, object], tokenizer: object
) -> None:
    """Each row renders as loaded, with its arguments as JSON objects (never escaped strings)."""
    template = template_text(name)
    for row in rows(datasets_by_config["sft_tools"]):
        rendered = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
            row["messages"], tools=row["tools"], chat_template=template, tokenize=False
        )
        assert double_encoded(rendered, row) == [], row["id"]


@pytest.mark.parametrize("name", sorted(STRING_ARGUMENT_TEMPLATES))
def test_string_argument_templates_fail_as_loaded_and_render_with_the_documented_map(
    name: str, datasets_by_config: dict[str, object], tokenizer: object
) -> None:
    """The card's one-liner (arguments back to JSON text) makes these templates render."""
    row = rows(datasets_by_config["sft_tools"])[0]
    template = template_text(name)
    with pytest.raises(TypeError, match="concatenate str"):
        tokenizer.apply_chat_template(  # type: ignore[attr-defined]
            row["messages"], tools=row["tools"], chat_template=template, tokenize=False
        )
    messages = [
        {
            **m,
            "tool_calls": [
                {
                    **c,
                    "function": {
                        **c["function"],
                        "arguments": json.dumps(c["function"]["arguments"]),
                    },
                }
                for c in m["tool_calls"] or []
            ]
            or None,
        }
        for m in row["messages"]
    ]
    rendered = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
        messages, tools=row["tools"], chat_template=template, tokenize=False
    )
    assert double_encoded(rendered, row) == []


@pytest.mark.parametrize("name", TEXT_TEMPLATES)
def test_every_template_renders_every_sft_row(
    name: str, datasets_by_config: dict[str, object], tokenizer: object
) -> None:
    """`prompt + completion` renders; the completion is exactly one assistant turn."""
    template = template_text(name)
    for row in rows(datasets_by_config["sft"]):
        assert [m["role"] for m in row["completion"]] == ["assistant"]
        assert row["prompt"][-1]["role"] == "user"
        tokenizer.apply_chat_template(  # type: ignore[attr-defined]
            row["prompt"] + row["completion"], chat_template=template, tokenize=False
        )


def test_sft_trains_on_the_target_turn_only(
    datasets_by_config: dict[str, object], tokenizer: object
) -> None:
    """SFTTrainer's tokenized rows mark exactly the completion's tokens for the loss."""
    from trl import SFTConfig, SFTTrainer  # noqa: F401 (the trainer's own tokenization)
    from trl.data_utils import apply_chat_template

    for row in rows(datasets_by_config["sft"]):
        rendered = apply_chat_template(
            {"prompt": row["prompt"], "completion": row["completion"]}, tokenizer
        )
        assert rendered["completion"].count("<|im_start|>assistant") == 0
        assert row["completion"][0]["content"] in rendered["completion"]


def two_step_args(config: type, tmp_path: Path) -> object:
    """Return the trainer `config` of a two-step CPU run under `tmp_path` that saves nothing."""
    return config(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=2,
        max_length=None,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        use_cpu=True,
    )


@pytest.mark.parametrize("config", ["sft", "sft_tools"])
def test_sft_trainer_runs_two_steps(
    config: str,
    datasets_by_config: dict[str, object],
    tokenizer: object,
    tiny_model: object,
    tmp_path: Path,
) -> None:
    """Two optimizer steps of TRL's SFTTrainer on the train split, as loaded."""
    from trl import SFTConfig, SFTTrainer

    args = two_step_args(SFTConfig, tmp_path)
    trainer = SFTTrainer(
        model=tiny_model,
        args=args,
        train_dataset=datasets_by_config[config]["train"],  # type: ignore[index]
        processing_class=tokenizer,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert len(losses) == 2 and all(math.isfinite(loss) and loss > 0 for loss in losses)


def test_dpo_trainer_runs_two_steps(
    datasets_by_config: dict[str, object], tokenizer: object, tiny_model: object, tmp_path: Path
) -> None:
    """Two optimizer steps of TRL's DPOTrainer on the conversational pairs, as loaded."""
    from trl import DPOConfig, DPOTrainer

    reference = copy.deepcopy(tiny_model)  # a local model has no hub name to reload it from

    args = two_step_args(DPOConfig, tmp_path)
    trainer = DPOTrainer(
        model=tiny_model,
        ref_model=reference,
        args=args,
        train_dataset=datasets_by_config["dpo"]["train"],  # type: ignore[index]
        processing_class=tokenizer,
    )
    trainer.train()
    assert trainer.state.global_step == 2
