"""Settings validated before anything runs, each problem as one line.

`check_startup` returns the warnings to print and raises `SettingsError` (its message is one line
naming the variable) for a setting that would publish to the wrong place or leak:
- `DISTILL_DATASET_NAME` must be a plain name (letters, digits, `.`, `_`, `-`; no path separator,
  no `..`): it becomes a folder under the hub root (checked by `Settings` itself, so Dagster runs
  refuse it too; `resolve_settings` turns it into one line);
- local roots (`DISTILL_DATA_DIR`, `DISTILL_RAW_ROOT`, `DISTILL_LAKE_ROOT`, `DISTILL_HUB_ROOT`,
  `DISTILL_MEMORY_ROOT`) must not be, or lie under, a file; the data dir (it holds the run lock),
  lake, hub and memory roots must be writable (their nearest existing folder is checked;
  object-store URIs are not checked here);
- `DISTILL_ALLOW_DROPPED_CONFIGS` names published configs (or is `*`): a misspelt name would
  allow nothing and block the release it was meant to let through;
- `DISTILL_ENV` is unset, `development` or `production`: a misspelt `development` would demand
  a player key, a misspelt `production` would be taken for one silently;
- `DISTILL_HUB_REPO_ID` needs `HF_TOKEN` (and the `owner/name` form): without a token the release
  would silently stay local;
- the public development player key (no `DISTILL_PLAYER_ID_KEY`) is allowed only with
  `DISTILL_ENV=development` (which the Makefile sets for `make run` and `make test`), and is then
  announced by a warning line every time, since player keys made with it can be reversed. It is
  announced once per process: a `distill` command prints it and records it (`announce`), so the
  runs it executes in-process do not log it again (`announced`).
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from distill_assets.contracts.published import CORE_SCHEMAS
from distill_assets.lib.settings import Settings, refuse_blank

ENV_VAR = "DISTILL_ENV"
DEVELOPMENT = "development"
ENVIRONMENTS = (DEVELOPMENT, "production")
DROPPED_CONFIGS_ENV = "DISTILL_ALLOW_DROPPED_CONFIGS"
PLAYER_KEY_ENV = "DISTILL_PLAYER_ID_KEY"
HUB_REPO_ENV = "DISTILL_HUB_REPO_ID"
HUB_TOKEN_ENV = "HF_TOKEN"
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
DEVELOPMENT_KEY_WARNING = (
    "WARNING: the public development player key is in use (DISTILL_ENV=development): published "
    f"player keys can be reversed; set {PLAYER_KEY_ENV} for real data"
)


STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
SQLITE_STORAGE_MESSAGES = ("disk is full", "readonly database", "unable to open database")


# warning lines this process has already shown
_ANNOUNCED: set[str] = set()


def announce(lines: list[str]) -> list[str]:
    """Record `lines` as shown by this process and return them (to print)."""
    _ANNOUNCED.update(lines)
    return lines


def announced(line: str) -> bool:
    """Return True when this process has already shown the warning `line`."""
    return line in _ANNOUNCED


class SettingsError(ValueError):
    """A setting that must be fixed before distill runs (the message is one line)."""


def resolve_settings() -> Settings:
    """Return `Settings.resolve()`, its validation errors as one `SettingsError` line."""
    try:
        return Settings.resolve()
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"].removeprefix("Value error, ")
        if not message.startswith("DISTILL_") and error["loc"]:
            variable = f"DISTILL_{str(error['loc'][0]).upper()}"
            message = f"{variable}={error['input']!r}: {message}"
        raise SettingsError(message) from None


def storage_error_line(exc: BaseException) -> str | None:
    """Return one line naming the path of a storage error (disk full, read-only, permission).

    None for any other error. SQLite (Dagster's default storage) names no file: the line names
    the instance folder, `$DAGSTER_HOME`.
    """
    if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
        where = exc.filename if exc.filename is not None else "(path not reported)"
        return f"{os.strerror(exc.errno)}: {where}"
    if isinstance(exc, sqlite3.OperationalError) and any(
        text in str(exc) for text in SQLITE_STORAGE_MESSAGES
    ):
        home = os.environ.get("DAGSTER_HOME", "(DAGSTER_HOME not set)")
        return f"Dagster storage: {exc}: under {home}"
    return None


def _local(root: str) -> Path | None:
    if "://" in root and not root.startswith("file://"):
        return None
    return Path(root.removeprefix("file://"))


def check_root(variable: str, root: str, writable: bool) -> None:
    """Raise if a local root is (or lies under) a file, or (if `writable`) cannot be written."""
    path = _local(root)
    if path is None:
        return
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise SettingsError(f"{variable}={root} lies under a file ({existing}), not a folder")
    if writable and not os.access(existing, os.W_OK | os.X_OK):
        raise SettingsError(f"{variable}={root} is not writable ({existing})")


def check_hub(environ: Mapping[str, str]) -> None:
    """Raise if a Hub repo id is set without a token, or is not `owner/name`."""
    repo_id = environ.get(HUB_REPO_ENV, "")
    if not repo_id:
        return
    if not REPO_ID.match(repo_id):
        raise SettingsError(f"{HUB_REPO_ENV}={repo_id!r} must have the form owner/name")
    if not environ.get(HUB_TOKEN_ENV):
        raise SettingsError(
            f"{HUB_REPO_ENV}={repo_id} is set but {HUB_TOKEN_ENV} is not: refusing to publish "
            "locally instead of to the Hub"
        )


def check_environment(environ: Mapping[str, str]) -> None:
    """Raise if `DISTILL_ENV` is set to anything but one of `ENVIRONMENTS`."""
    value = environ.get(ENV_VAR, "")
    if value and value not in ENVIRONMENTS:
        raise SettingsError(f"{ENV_VAR}={value!r} must be one of {', '.join(ENVIRONMENTS)}")


def check_dropped_configs(setting: str) -> None:
    """Raise if `DISTILL_ALLOW_DROPPED_CONFIGS` names something that is not a published config."""
    names = [name.strip() for name in setting.split(",") if name.strip()]
    unknown = [name for name in names if name != "*" and name not in CORE_SCHEMAS]
    if unknown:
        raise SettingsError(
            f"{DROPPED_CONFIGS_ENV}={setting!r} names no published config: {', '.join(unknown)} "
            f"(configs: {', '.join(sorted(CORE_SCHEMAS))}, or *)"
        )


def check_player_key(environ: Mapping[str, str]) -> list[str]:
    """Return the development-key warning, or raise if that key would be used outside development.

    A key configured on the `player_id_hasher` resource is checked when the resource resolves it.
    """
    try:
        key = refuse_blank(PLAYER_KEY_ENV, environ.get(PLAYER_KEY_ENV, ""))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    if key:
        return []
    if environ.get(ENV_VAR) != DEVELOPMENT:
        raise SettingsError(
            f"{PLAYER_KEY_ENV} is not set: the public development key is only allowed with "
            f"{ENV_VAR}={DEVELOPMENT}"
        )
    return [DEVELOPMENT_KEY_WARNING]


def check_startup(
    settings: Settings, environ: Mapping[str, str] | None = None, player_key: bool = True
) -> list[str]:
    """Validate settings and environment; return warning lines, raise `SettingsError` on errors.

    `player_key=False` leaves the player key to the `player_id_hasher` resource (the definitions'
    load: a deployment may configure the key on the resource instead of the environment).
    """
    env = os.environ if environ is None else environ
    check_root("DISTILL_DATA_DIR", settings.data_dir, writable=True)
    check_root("DISTILL_RAW_ROOT", settings.raw_root, writable=False)
    check_root("DISTILL_LAKE_ROOT", settings.lake_root, writable=True)
    check_root("DISTILL_HUB_ROOT", settings.hub_root, writable=True)
    check_root("DISTILL_MEMORY_ROOT", settings.memory_root, writable=True)
    check_dropped_configs(settings.allow_dropped_configs)
    check_hub(env)
    check_environment(env)
    return check_player_key(env) if player_key else []


def startup_settings(prefix: str) -> Settings | None:
    """Resolve and check the settings for a `distill` command, printing lines under `prefix`.

    Print the first error (`{prefix} error: ...`) and return None (the command exits 2), or print
    and `announce` the warnings and return the settings.
    """
    try:
        settings = resolve_settings()
        warnings = check_startup(settings)
    except SettingsError as exc:
        print(f"{prefix} error: {exc}")
        return None
    for warning in announce(warnings):
        print(f"{prefix} {warning}")
    return settings
