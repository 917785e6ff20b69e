"""``harness --help`` names the docs pages a wheel user should look for (issue 35, item 8):
every page it names exists, so the pointer cannot drift from the docs folder."""

from __future__ import annotations

import re

from helpers.paths import ROOT

CONFIG = ROOT / "harness" / "conf" / "config.yaml"


def named_pages() -> list[str]:
    footer = CONFIG.read_text("utf-8").split("footer: |", 1)[1].split("template:", 1)[0]
    pages = []
    for folder, names in re.findall(r"docs/(guide|reference)/\s*\(([^)]*)\)", footer):
        for name in re.findall(r"([\w-]+)(?::[^;,]*)?[;,]?", names):
            pages.append(f"docs/{folder}/{name}.md")
    return pages


def test_every_page_the_help_names_exists() -> None:
    pages = named_pages()
    assert len(pages) >= 12, pages
    assert "docs/guide/confidence.md" in pages and "docs/reference/errors.md" in pages
    missing = [p for p in pages if not (ROOT / p).is_file()]
    assert missing == [], missing
