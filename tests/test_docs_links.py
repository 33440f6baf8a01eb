"""The README and docs/ link every page, and every relative link resolves (file and #anchor)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "deploy" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (links in code are not links)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (duplicates numbered as GitHub does)."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(_prose(path.read_text(encoding="utf-8")))


def markdown_files() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + [p for p in PAGES if p.exists()]


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in markdown_files():
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such anchor)")
    assert not broken, "\n".join(broken)


def test_readme_links_every_docs_page() -> None:
    linked = {
        (ROOT / target.partition("#")[0]).resolve()
        for target in links(ROOT / "README.md")
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)
    }
    missing = [str(p.relative_to(ROOT)) for p in sorted(DOCS.rglob("*.md")) if p not in linked]
    assert not missing, f"README.md does not link: {missing}"


CODE_DIRS = ("distill_assets", "sql", "bench")
OUTSIDE = re.compile(r"seed 00|DESIGN\.md", re.IGNORECASE)
CITATION = re.compile(r"\b(docs/[\w/.-]+\.md|README\.md(?=#))(?:#([\w-]+))?")


def code_files() -> list[Path]:
    return sorted(
        path
        for name in CODE_DIRS
        for path in (ROOT / name).rglob("*")
        if path.suffix in {".py", ".sql", ".md"} and "__pycache__" not in path.parts
    )


def test_code_cites_no_document_outside_the_repository() -> None:
    """Code, SQL and benchmarks cite the pages here, never a seed spec or DESIGN.md."""
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in code_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not found, "\n".join(found)


def test_code_citations_of_docs_resolve() -> None:
    """Every `docs/<page>.md#anchor` (or `README.md#anchor`) named in code exists."""
    broken = []
    for path in code_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for page, anchor in CITATION.findall(line):
                dest = ROOT / page
                if not dest.exists() or (anchor and anchor not in anchors(dest)):
                    broken.append(f"{path.relative_to(ROOT)}:{n}: {page}#{anchor}")
    assert not broken, "\n".join(broken)
