"""The pydantic contracts read as the ingest reads: a record repeating a key is refused first.

pydantic (like Python's `json`) keeps the last of repeated keys and DuckDB the first; the ingest
quarantines such a record as `duplicate_key` (macro `has_duplicate_key`), so the models' side of
the contract tests refuses it before validating.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class DuplicateKeyError(ValueError):
    """A JSON object repeats a key."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise DuplicateKeyError(f"repeated key in {keys}")
    return dict(pairs)


def validate_json(model: type[M], text: str) -> M:
    """Validate `text` as `model`, refusing a JSON object (at any depth) that repeats a key."""
    # not JSON at all: the model says why
    with contextlib.suppress(json.JSONDecodeError):
        json.loads(text, object_pairs_hook=_unique)
    return model.model_validate_json(text)
