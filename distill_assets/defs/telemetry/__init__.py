"""Telemetry room (seed 004): events → quarantine, dialogues."""
