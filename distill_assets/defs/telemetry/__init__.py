"""Telemetry room (docs/sources/telemetry.md): events → quarantine, dialogues."""
