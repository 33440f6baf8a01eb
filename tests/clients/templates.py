"""The chat templates TRL ships (`trl/chat_templates/*.jinja`), by name."""

from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    """Return the installed `trl` package's chat template folder."""
    import trl

    return Path(trl.__file__).parent / "chat_templates"


def template_names() -> list[str]:
    """Return the name (file stem) of every shipped template, sorted."""
    return sorted(path.stem for path in templates_dir().glob("*.jinja"))


def template_text(name: str) -> str:
    """Return one template's Jinja source."""
    return (templates_dir() / f"{name}.jinja").read_text(encoding="utf-8")


def supports_tools(name: str) -> bool:
    """Return whether a template renders tool calls (it reads `tool_calls`)."""
    return "tool_calls" in template_text(name)
