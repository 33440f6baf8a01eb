"""Versioned rules from the seeds: one module per concern.

A rules module's version is the SHA-256 of its source text (first 12 hex digits). Assets that apply
a module use that version as their `code_version`, so changing a rule marks exactly those assets
(and their downstream) stale, and record it in every materialization's metadata.
"""

from __future__ import annotations

import hashlib
from importlib import import_module
from types import ModuleType

VERSION_HEX_DIGITS = 12


def module_version(module: ModuleType) -> str:
    """Return the content hash of one rules module's source file."""
    spec = module.__spec__
    if spec is None or spec.loader is None or not hasattr(spec.loader, "get_data"):
        raise ValueError(f"cannot read the source of rules module {module.__name__}")
    source = spec.loader.get_data(spec.origin)  # type: ignore[attr-defined]
    return hashlib.sha256(source).hexdigest()[:VERSION_HEX_DIGITS]


def rules_version(*names: str) -> str:
    """Return the combined version of the named rules modules (e.g. `rules_version("traces")`).

    One module gives its own version; several give a hash of their `name=version` pairs, so the
    result changes when any of them does.
    """
    versions = {name: module_version(import_module(f"{__name__}.{name}")) for name in names}
    if len(versions) == 1:
        return next(iter(versions.values()))
    joined = ";".join(f"{name}={version}" for name, version in sorted(versions.items()))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:VERSION_HEX_DIGITS]


def rules_metadata(*names: str) -> dict[str, str]:
    """Return materialization metadata naming the rules applied and their versions."""
    meta = {"rules_version": rules_version(*names)}
    meta.update({f"rules/{name}": rules_version(name) for name in names})
    return meta
