"""Novelty rules (docs/sources/telemetry.md#novelty): vector deduplication and novelty.

Each telemetry feed row (dpo pairs, rlds episodes, cot traces) is embedded with the project's
embedder (text per feed in `defs/telemetry/novelty.py`). Its novelty score is
1 - max cosine similarity to the rows of the same feed table and the same contributor (removal
subject: the player, or both players of a pair) already published: every earlier partition (the
index, the embeddings stored with those rows) and the rows before it in the same partition (in
feed order). Per contributor, departing from a global comparison, so that a deletion never
changes another player's rows (a partition rewritten after a deletion equals one rebuilt);
duplicates across players are the curation layer's exact and near-duplicate dedup.
Cosine > DUPLICATE_ABOVE ("Reject near-duplicates (similarity > 0.99)")
removes the row as `near_duplicate_of_published`. A row with nothing to compare has novelty 1.
"""

from __future__ import annotations

DUPLICATE_ABOVE = 0.99
DUPLICATE_REASON = "near_duplicate_of_published"
NOVELTY_DECIMALS = 4
