"""Ingest dates given on the command line: parsed and checked with one-line errors."""

from __future__ import annotations

from datetime import date, timedelta


class DateError(ValueError):
    """A command-line date or range that cannot be used; the message is the one line to print."""


def parse_day(text: str, what: str = "date") -> date:
    """Parse `YYYY-MM-DD` or raise `DateError` naming the bad value."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise DateError(f"{what} {text!r} is not a date (YYYY-MM-DD)") from None


def parse_range(text: str) -> tuple[date, date]:
    """Parse `FROM..TO` (or one date) into an inclusive range, FROM not after TO."""
    start_text, _, end_text = text.partition("..")
    start = parse_day(start_text, "partition")
    end = parse_day(end_text, "partition") if end_text else start
    return check_order(start, end)


def check_order(start: date, end: date) -> tuple[date, date]:
    """Return the range, or raise `DateError` when it runs backwards."""
    if start > end:
        raise DateError(f"range {start}..{end} runs backwards")
    return start, end


def days_in(start: date, end: date) -> list[str]:
    """Return every date of an inclusive range as `YYYY-MM-DD`."""
    return [(start + timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]
