"""A release never silently loses a config or split that the previous version had.

The candidate's manifest already counts every config's rows per split against the version it is
compared with (`ReleaseManifest.changes`). A config or split that had rows there and has none now
(every row of it filtered, deleted or excluded; a feed that stopped) blocks the release with a
one-line reason, unless the setting `DISTILL_ALLOW_DROPPED_CONFIGS` names the config (or is `*`):
then dropping it is on purpose and the card's "what changed" table records it.
"""

from __future__ import annotations

from distill_assets.contracts.release import ReleaseManifest

ALLOW_ALL = "*"


def allowed_drops(setting: str) -> frozenset[str]:
    """Return the configs a release may drop, from the comma-separated setting (`*`: any)."""
    return frozenset(name.strip() for name in setting.split(",") if name.strip())


def dropped_splits(manifest: ReleaseManifest) -> dict[str, list[str]]:
    """Return config -> the splits that had rows in the previous version and have none now."""
    dropped: dict[str, list[str]] = {}
    for config, splits in sorted(manifest.changes.items()):
        gone = [split for split, c in splits.items() if c.previous > 0 and c.current == 0]
        if gone:
            dropped[config] = gone
    return dropped


def drop_reasons(manifest: ReleaseManifest, allowed: frozenset[str]) -> dict[str, str]:
    """Return config -> a one-line reason for every drop that `allowed` does not let through."""
    reasons = {}
    for config, splits in dropped_splits(manifest).items():
        if ALLOW_ALL in allowed or config in allowed:
            continue
        what = "config" if config not in manifest.configs else "split " + "/".join(splits)
        before = ", ".join(f"{s} {manifest.changes[config][s].previous}" for s in splits)
        reasons[config] = (
            f"{what} `{config}` had rows in {manifest.previous_version} ({before}) and has none "
            f"now; set DISTILL_ALLOW_DROPPED_CONFIGS={config} to publish without it on purpose"
        )
    return reasons
