"""Witness review: which telemetry rows a human reviews.

See docs/sources/telemetry.md#witness-review.

The seed's Witnesses are the human quality-assurance layer. A published telemetry feed row is
queued for them when any trigger holds (all that hold are listed, in this order):
- `high_ambiguity` ("data with high ambiguity score": verify decision quality): a decision pair
  whose ambiguity_score is above AMBIGUITY_ABOVE, or a dialogue whose ambiguity_level is one of
  AMBIGUOUS_LEVELS;
- `extreme_novelty` ("extremely high novelty score": genuine creativity, not noise): a row whose
  novelty_score is at least NOVELTY_AT_LEAST and below NOVELTY_UNCOMPARED - a score of 1.0 means
  the contributor had nothing earlier to compare with, which says nothing about the row;
- `fraud_flagged` ("suspicious patterns flagged by system": gaming or botting): a row with
  validation flags on its events, or one of whose players `telemetry/player_quality` flags.

A Witness approves or rejects a queued row with `distill review --source telemetry` (the same
commands as escalation review). The decision is appended to the source's decisions file; the
latest decision per row wins. A rejected row is listed in `telemetry/witness_exclusions` (reason
REJECTED_REASON) and leaves every config at the next release; a reviewed row carries its
validation record (`VALIDATION_TYPE`, result, validator, time) in `metadata.validation` from the
next materialization of its partition.
"""

from __future__ import annotations

AMBIGUITY_ABOVE = 0.9
AMBIGUOUS_LEVELS: tuple[str, ...] = ("Critical",)
NOVELTY_AT_LEAST = 0.9
NOVELTY_UNCOMPARED = 1.0
TRIGGERS: tuple[str, ...] = ("high_ambiguity", "extreme_novelty", "fraud_flagged")
DECISIONS: tuple[str, ...] = ("approve", "reject")
REJECTED_REASON = "rejected_by_witness"
VALIDATION_TYPE = "witness"
