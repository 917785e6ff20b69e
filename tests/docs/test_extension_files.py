"""docs/contributing/architecture.md says, per kind of extension, which files a built-in of
that kind touches (issue 32, item 6): this test finds them for the example it names, so the
page fails when an extension starts needing a file more (or one less) than it says.

A file touches the built-in ``group=name`` when it is its option file (``conf/GROUP/NAME.yaml``),
the module of the option's class (``_target_``, when no other option of the group shares it:
a judge preset shares the judge's class), or when it names the class or its module, has a
table row or column for the option, a ``### group=name`` section (the generated config
reference), or a dependency commented for it (pyproject.toml). Tests are not counted (every
extension brings its own), nor the map of moved modules (history).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing" / "architecture.md"
CONF = ROOT / "harness" / "conf"
NOT_COUNTED = {"harness/core/moved.py"}


def searched() -> list[Path]:
    found = [*ROOT.glob("harness/**/*.py"), *ROOT.glob("harness/**/*.yaml"),
             *ROOT.glob("docs/**/*.md"), ROOT / "README.md", ROOT / "pyproject.toml"]
    return sorted(p for p in found if p.is_file())


def target(option_file: Path) -> str | None:
    found = re.search(r"^_target_:\s*(\S+)", option_file.read_text("utf-8"), re.MULTILINE)
    return found.group(1) if found else None


def touched(group: str, name: str) -> set[str]:
    """The files (relative to the repository) that built-in ``group=name`` touches."""
    option = CONF / group / f"{name}.yaml"
    patterns = [rf"^\| `{name}` \|", rf"^\| `{group}` key \|.*`{name}`",
                rf"^### {group}={name}$"]
    words = [name]
    files = {option}
    dotted = target(option)
    shared = [p for p in (CONF / group).glob("*.yaml") if p != option and target(p) == dotted]
    if dotted and not shared:
        module, _, cls = dotted.rpartition(".")
        as_path = ROOT / Path(*module.split("."))
        files.add(as_path.with_suffix(".py") if as_path.with_suffix(".py").exists()
                  else as_path / "__init__.py")
        patterns += [rf"\b{re.escape(module)}\b", rf"\bclass {cls}\b", rf"\.{cls}\b"]
        words.append(cls)
    patterns.append(rf"^\s*\"[^\"]+\",\s*#.*\b({'|'.join(map(re.escape, words))})\b")
    files |= {p for p in searched()
              if any(re.search(x, p.read_text("utf-8"), re.MULTILINE) for x in patterns)}
    return {str(p.relative_to(ROOT)) for p in files} - NOT_COUNTED


def rows() -> list[tuple[str, str, str, int, set[str]]]:
    """``(kind, group, name, count, files)`` per row of the page's table of extensions."""
    text = PAGE.read_text("utf-8")
    table = text.split("| to add | example | files |", 1)[1].split("\n\n", 1)[0]
    out = []
    for line in table.strip().splitlines()[1:]:
        kind, example, files = (c.strip() for c in line.strip("|").split("|"))
        found = re.fullmatch(r"`(\w+)=(\w+)`", example)
        if not found:
            continue  # a kind with no built-in to measure (a row says so)
        count = re.match(r"(\d+)", files)
        assert count, f"{kind}: the files cell starts with their number"
        out.append((kind, found.group(1), found.group(2), int(count.group(1)),
                    set(re.findall(r"`([\w./-]+\.(?:py|yaml|md|toml))`", files))))
    return out


def test_the_page_measures_the_kinds_the_issue_counted() -> None:
    assert {(group, name) for _, group, name, _, _ in rows()} == {
        ("metric", "non_llm"), ("retriever", "bm25"), ("judge", "ollama")}


@pytest.mark.parametrize(("kind", "group", "name", "count", "listed"), rows(),
                         ids=lambda v: v if isinstance(v, str) and " " in v else None)
def test_the_files_listed_are_the_files_the_built_in_touches(
        kind: str, group: str, name: str, count: int, listed: set[str]) -> None:
    assert sorted(listed) == sorted(touched(group, name)), kind
    assert count == len(listed), f"{kind}: says {count} files, lists {len(listed)}"


def test_a_new_mention_would_be_caught(tmp_path: Path) -> None:
    """The search is not vacuous: the example built-ins are found where they are defined."""
    assert {"harness/metrics/non_llm.py", "harness/conf/metric/non_llm.yaml"} <= touched(
        "metric", "non_llm")
    assert "harness/retrievers/bm25.py" in touched("retriever", "bm25")
    assert touched("judge", "ollama") >= {"harness/conf/judge/ollama.yaml",
                                          "docs/guide/judges.md"}
