"""Per-config notes in the dataset card (`ReleaseContributions.card_notes`).

A source contributes, per config, markdown notes (e.g. the step layout and token axes of `rlds`);
the card shows the notes of the configs the version holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from distill_assets.contracts.release import ReleaseManifest


def notes_section(manifest: ReleaseManifest, card_notes: Mapping[str, Sequence[str]]) -> str:
    """Return the card's `## Config notes` section (empty when no config has notes)."""
    notes = [note for config in sorted(manifest.configs) for note in card_notes.get(config, ())]
    return "## Config notes\n\n" + "\n\n".join(notes) if notes else ""
