"""Per-config notes in the dataset card (`contracts.published.CARD_NOTES`).

A source declares, per config, markdown notes named `"module:ATTRIBUTE"` (e.g. the step layout
and token axes of `rlds`); the card shows the notes of the configs the version holds.
"""

from __future__ import annotations

from importlib import import_module

from distill_assets.contracts.published import CARD_NOTES
from distill_assets.contracts.release import ReleaseManifest


def notes_section(manifest: ReleaseManifest) -> str:
    """Return the card's `## Config notes` section (empty when no config has notes)."""
    notes = []
    for config in sorted(manifest.configs):
        for target in CARD_NOTES.get(config, []):
            module, _, name = target.partition(":")
            notes.append(str(getattr(import_module(module), name)))
    return "## Config notes\n\n" + "\n\n".join(notes) if notes else ""
