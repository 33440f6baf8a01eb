"""The legacy escalations database: `knowledge_distillation.db` as the production system made it.

Its nine tables and their columns (JSON-array columns are TEXT), how each maps into distill
(example tables, attached tables, stored tables), and the schemas of what a migration reports
(`defs/escalations/legacy.py` applies it).
"""

from __future__ import annotations

import polars as pl

LEGACY_TABLES: dict[str, tuple[str, ...]] = {
    "examples": (
        "id", "query", "sam_attempt", "claude_response", "reasoning_type", "domain",
        "complexity", "quality_score", "human_reviewed", "approved", "reviewer_notes",
        "reasoning_pattern_id", "created_at", "reviewed_at", "exported_at",
    ),
    "reasoning_patterns": (
        "id", "example_id", "reasoning_type", "reasoning_steps", "tool_usage", "complexity",
        "confidence", "created_at",
    ),
    "corrections": (
        "id", "example_id", "error_type", "what_sam_said", "what_was_wrong", "correct_answer",
        "improvements", "lesson_learned", "created_at",
    ),
    "principles": (
        "id", "domain", "principle", "examples", "importance", "source_count", "verified",
        "created_at", "updated_at",
    ),
    "review_queue": (
        "id", "example_id", "priority", "reason", "status", "assigned_to", "created_at",
        "updated_at",
    ),
    "chain_of_thought": (
        "id", "prompt", "reasoning_steps", "final_answer", "domain", "complexity", "success",
        "created_at",
    ),
    "preference_pairs": (
        "id", "prompt", "good_response", "bad_response", "reason", "domain", "created_at",
    ),
    "skill_templates": (
        "id", "name", "description", "pattern", "examples", "domains", "created_at",
    ),
    "raw_interactions": (
        "id", "prompt", "response", "domain", "quality_score", "processed", "created_at",
    ),
}  # fmt: skip
# legacy table -> (query column, answer column, SAM attempt column) of the examples it yields
EXAMPLE_TABLES: dict[str, tuple[str, str, str | None]] = {
    "examples": ("query", "claude_response", "sam_attempt"),
    "chain_of_thought": ("prompt", "final_answer", None),
    "preference_pairs": ("prompt", "good_response", "bad_response"),
    "raw_interactions": ("prompt", "response", None),
}
ATTACHED_TABLES = ("reasoning_patterns", "corrections")
STORED_TABLES = ("principles", "review_queue", "skill_templates")
OUTCOMES = ("migrated", "attached", "stored", "quarantined")
RECONCILIATION_SCHEMA = pl.Schema(
    {
        "source_file": pl.String(),
        "legacy_table": pl.String(),
        "rows_read": pl.Int64(),
        "migrated": pl.Int64(),
        "attached": pl.Int64(),
        "stored": pl.Int64(),
        "quarantined": pl.Int64(),
        "quarantine_reasons": pl.String(),
        "problems": pl.List(pl.String()),
    }
)
QUARANTINE_SCHEMA = pl.Schema(
    {
        "source_file": pl.String(),
        "legacy_table": pl.String(),
        "legacy_id": pl.String(),
        "source_ref": pl.String(),
        "reason": pl.String(),
    }
)
STORED_SCHEMA = pl.Schema(
    {
        "source_file": pl.String(),
        "source_ref": pl.String(),
        "example_id": pl.String(),
        "row": pl.String(),
    }
)
PROBLEM_CORRUPT = "corrupt_database"
PROBLEM_MISSING_TABLE = "missing_table"
