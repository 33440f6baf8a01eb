"""The release the client tests load, and the tiny model and tokenizer they train.

`make test-clients` builds a release of the sample data (`distill run`) and points
`DISTILL_CLIENTS_RELEASE` at its `latest` folder; the tests load it with
`load_dataset(path, config)` only, as docs/consuming.md says. Nothing is downloaded: the tokenizer
is trained here on the release's text and the model is randomly initialised.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# nothing from a model hub, ever: the model and tokenizer are made here
os.environ["HF_HUB_OFFLINE"] = "1"
CONFIGS = ("sft", "sft_tools", "dpo")
SPECIAL_TOKENS = ["<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
VOCAB_SIZE = 512


@pytest.fixture(scope="session")
def release() -> Path:
    """The release folder named by `DISTILL_CLIENTS_RELEASE`."""
    path = Path(os.environ["DISTILL_CLIENTS_RELEASE"])
    assert (path / "README.md").is_file(), f"no release at {path}: run `make test-clients`"
    return path


@pytest.fixture(scope="session")
def datasets_by_config(release: Path) -> dict[str, object]:
    """Every config the client tests use, loaded exactly as the docs say."""
    from datasets import load_dataset

    return {config: load_dataset(str(release), config) for config in CONFIGS}


def _texts(datasets_by_config: dict[str, object]) -> Iterator[str]:
    for dataset in datasets_by_config.values():
        for split in dataset.values():  # type: ignore[attr-defined]
            for row in split:
                yield str({k: v for k, v in row.items() if k != "metadata"})


@pytest.fixture(scope="session")
def tokenizer(datasets_by_config: dict[str, object]):
    """A byte-level BPE tokenizer trained here on the release's text (Qwen2.5 chat template)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from tests.clients.templates import template_text

    model = Tokenizer(models.BPE(unk_token="<unk>"))
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    model.train_from_iterator(_texts(datasets_by_config), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=model,
        unk_token="<unk>",
        pad_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
    )
    fast.chat_template = template_text("qwen2_5")
    return fast


@pytest.fixture
def tiny_model(tokenizer):
    """A randomly initialised one-layer Qwen2 causal LM over the tokenizer's vocabulary."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32768,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return Qwen2ForCausalLM(config)
