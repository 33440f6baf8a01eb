"""Dataset card notes on how trainers take `sft`, `sft_tools` and `dpo` (their published shapes).

Registered per config in `definitions.RELEASE_CONTRIBUTIONS`; `make test-clients` checks every claim
here against TRL, transformers and `datasets` (tests/clients/).
"""

VERSIONS = """Tested with `datasets` 5.2, TRL 1.16 and transformers 5.24 (`make test-clients`).
`sft_tools` needs `datasets` >= 4.7 (its `Json` feature: `arguments` and `tools` load as dicts)."""

SFT_NOTES = f"""### `sft`: prompt-completion

TRL's conversational prompt-completion form: `prompt` is the messages before the target,
`completion` the target assistant turn (one message). `SFTTrainer` (default
`completion_only_loss`) trains on the completion only, never on earlier assistant turns repeated
as context. `prompt + completion` is the whole conversation (`sft-extract` writes it as
`messages`). {VERSIONS}

```python
from datasets import load_dataset
from trl import SFTTrainer
trainer = SFTTrainer(model=..., train_dataset=load_dataset(path, "sft")["train"])
```

Templates TRL ships that cannot render these rows as they are: `gemma` (no system role),
`llava_next` (content must be a list of blocks)."""

SFT_TOOLS_NOTES = f"""### `sft_tools`: native tool calls

OpenAI/TRL tool-calling messages: assistant turns carry `tool_calls` with `arguments` as a JSON
object and `content` `""`, `tool` turns their `tool_call_id`; `tools` is the list of function
schemas (objects). The only `system` message is the first: the agent's DRIVER NOTEs are a `user`
turn after the tool result they follow. Rows go unchanged to
`tokenizer.apply_chat_template(row["messages"], tools=row["tools"])` and to `SFTTrainer`.
{VERSIONS}

Templates that concatenate `arguments` as a string (TRL's `deepseekv3`; its `deepseekv3_training`
renders objects) need them as JSON text first:
`ds = ds.map(lambda r: {{"messages": [{{**m, "tool_calls": [{{**c, "function": {{**c["function"],
"arguments": json.dumps(c["function"]["arguments"])}}}} for c in m["tool_calls"] or []] or None}}
for m in r["messages"]]}})`."""

DPO_SHAPE_NOTES = """### `dpo`: conversational pairs

`prompt` is one `user` message, `chosen` and `rejected` one `assistant` message each (TRL's
conversational preference form), so `DPOTrainer` applies the chat template. The plain-string form:
`ds.map(lambda r: {k: r[k][0]["content"] for k in ("prompt", "chosen", "rejected")})`. The
configs table reports the length bias (share of pairs whose chosen side is longer)."""

COT_OUTCOME_NOTES = """### `cot`: `outcome`

`outcome` is what happened after the reasoning where the source observed it (`source =
telemetry`: the game's outcome). It is `""` on every `source = escalations` row: an escalation
records a question and the answers to it, never what followed. Steps in `thought_process` keep the
lines under them (a step's code block follows it on new lines)."""
