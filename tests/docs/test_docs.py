"""The README and the pages of docs/ agree with conf/, the code and each other.

Fast: file reads, plus the shared ranking function and the docs' example metric run
in-process (no CLI). conf/ is read at test time, so a new option, key or default in conf/
fails here until the docs say it too. Every check reads the page the text lives on: the
README (the front door), the guides, the reference and the contributing pages; links,
paths, dotted names and Python blocks are checked on every page, and every page must be in
mkdocs.yml's nav (``mkdocs build --strict`` itself runs in CI's docs step and ``make docs``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import unicodedata
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.paths import CONF, ROOT

README_PATH = ROOT / "README.md"
DOCS = ROOT / "docs"
METRICS_DOC = DOCS / "reference" / "metrics.md"
ARCHITECTURE_DOC = DOCS / "contributing" / "architecture.md"
CONFIG_DOC = DOCS / "reference" / "config.md"
RETRIEVERS_DOC = DOCS / "guide" / "retrievers.md"
OUTPUTS_DOC = DOCS / "reference" / "outputs.md"
DEVELOPMENT_DOC = DOCS / "contributing" / "development.md"
EXTENDING_DOC = DOCS / "contributing" / "extending.md"
#: Every page of the site, and the Markdown files at the top that link into it.
PAGES = sorted(DOCS.rglob("*.md"))
ALL_DOCS = [README_PATH, ROOT / "CONTRIBUTING.md", *PAGES]
README_MAX_BYTES = 12 * 1024
DASH = "—"

Table = list[dict[str, str]]


# ------------------------------------------------------------------------- helpers


def read(path: Path) -> str:
    return path.read_text("utf-8")


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(read(path)) or {}
    assert isinstance(data, dict), path
    return data


def split_row(line: str) -> list[str]:
    """The cells of a markdown table row (``\\|`` inside a cell is not a separator)."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip() for c in cells]


def tables(text: str) -> list[tuple[list[str], Table]]:
    """Every markdown table in ``text``: its header cells and its rows as dicts."""
    found: list[tuple[list[str], Table]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines) - 1:
        if lines[i].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            header = split_row(lines[i])
            rows: Table = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(dict(zip(header, split_row(lines[i]), strict=True)))
                i += 1
            found.append((header, rows))
        else:
            i += 1
    return found


def table_with_header(text: str, *header: str) -> tuple[list[str], Table]:
    """The one table whose header starts with the cells ``header``."""
    n = len(header)
    matches = [(h, rows) for h, rows in tables(text) if tuple(h[:n]) == header]
    assert len(matches) == 1, f"expected one table headed {header}, found {len(matches)}"
    return matches[0]


def table(text: str, *header: str) -> Table:
    """The rows of the one table whose header starts with ``header``."""
    return table_with_header(text, *header)[1]


def ticked(cell: str) -> list[str]:
    """The backticked words of a cell, in order."""
    return re.findall(r"`([^`]+)`", cell)


def render(value: Any) -> str:
    """A YAML scalar as the README writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return str(value)


def strip_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def section(text: str, heading: str) -> str:
    """The text under a heading line, up to the next heading of the same or a higher level
    (``#`` lines inside fenced code are not headings)."""
    level = len(heading.split(" ", 1)[0])
    lines = text.splitlines()
    start = lines.index(heading) + 1
    fenced = False
    for i in range(start, len(lines)):
        if lines[i].startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(rf"#{{1,{level}}} ", lines[i]):
            return "\n".join(lines[start:i])
    return "\n".join(lines[start:])


def groups() -> list[str]:
    """Every config group in conf/: ``dataset``, ..., ``hydra/launcher``."""
    out = []
    for d in sorted(p for p in CONF.rglob("*") if p.is_dir()):
        if any(d.glob("*.yaml")):
            out.append(d.relative_to(CONF).as_posix())
    return out


def options(group: str) -> set[str]:
    return {p.stem for p in (CONF / group).glob("*.yaml")}


def defaults() -> dict[str, Any]:
    """``group -> default option`` from conf/config.yaml's defaults list."""
    out: dict[str, Any] = {}
    for item in load_yaml(CONF / "config.yaml")["defaults"]:
        if isinstance(item, dict):
            (key, value), = item.items()
            key = key.removeprefix("optional ").removeprefix("override ")
            out[key.split("@", 1)[0]] = value
    return out


def option_keys(path: Path) -> dict[str, Any]:
    """The settings a group option file defines: its keys, less Hydra's, plus the packages
    its defaults list fills (``- /retriever@retrievers.bm25: bm25`` fills ``retrievers``)."""
    data = load_yaml(path)
    keys = {k: v for k, v in data.items() if k not in ("_target_", "_recursive_", "defaults")}
    for item in data.get("defaults") or []:
        name = next(iter(item)) if isinstance(item, dict) else str(item)
        if "@" in name and not name.split("@", 1)[1].startswith("_global_"):
            package = name.split("@", 1)[1].split(".")[0]
            part = name.split("@", 1)[1].split(".", 1)[-1]
            entry = keys.setdefault(package, {})
            if isinstance(entry, dict):
                entry.setdefault(part, None)
    return keys


def github_slug(heading: str) -> str:
    text = heading.strip().lower()
    text = "".join(
        c for c in text if c in " -_" or unicodedata.category(c)[0] in ("L", "N")
    )
    return text.replace(" ", "-")


README = read(README_PATH)
CONFIG = read(CONFIG_DOC)


# ------------------------------------------------------------------ config groups


def test_group_table_lists_every_group_and_option() -> None:
    rows = {ticked(r["group"])[0]: r for r in table(README, "group")}
    assert set(rows) == set(groups()) - {"hydra"}, "README 'Config groups' table vs conf/"
    for group, row in rows.items():
        listed = set(ticked(row["options"]))
        assert listed == options(group), f"README options of {group!r} vs conf/{group}/"


def test_group_table_marks_the_defaults() -> None:
    rows = {ticked(r["group"])[0]: r for r in table(README, "group")}
    for group, row in rows.items():
        marked = set(re.findall(r"`([^`]+)` \(default\)", row["options"]))
        default = defaults().get(group)
        if isinstance(default, str) and not default.startswith("${"):
            assert marked == {default}, f"default of {group!r}: conf says {default!r}"
        else:
            assert not marked, f"{group!r} has no fixed default option in conf/config.yaml"


# ------------------------------------------------------------------- run.* keys


def test_run_table_matches_config_yaml() -> None:
    run = load_yaml(CONF / "config.yaml")["run"]
    rows = {ticked(r["key"])[0]: r for r in table(section(CONFIG, "## run"), "key")}
    assert set(rows) == {f"run.{k}" for k in run}, "config.md run table vs conf/config.yaml run:"
    for key, value in run.items():
        assert ticked(rows[f"run.{key}"]["default"]) == [render(value)], f"default of run.{key}"


def test_top_level_keys_are_documented() -> None:
    config = load_yaml(CONF / "config.yaml")
    rows = {ticked(r["key"])[0]: r for r in table(section(CONFIG, "## Top-level keys"), "key")}
    assert set(rows) == set(config) - {"defaults", "hydra", "run"}, "config.md top-level keys"
    for key in rows:
        assert ticked(rows[key]["default"]) == [render(config[key])], key
        assert f"`{key}`" in README, f"the README's 'Config groups' names {key}"


# ------------------------------------------------------------ group option tables


#: ``group -> first header cell`` of the retrievers guide's tables listing each option's keys.
SETTINGS_TABLES = {"retriever": "`retriever` key", "rerank": "`rerank` key"}


@pytest.mark.parametrize("group", sorted(SETTINGS_TABLES))
def test_settings_table_matches_every_option_file(group: str) -> None:
    if not (CONF / group).is_dir():
        pytest.skip(f"no conf/{group}/")
    # one table, or several side by side (each option in one of them)
    found = [(h, rows) for h, rows in tables(read(RETRIEVERS_DOC))
             if h[:1] == [SETTINGS_TABLES[group]]]
    assert found, f"no table headed {SETTINGS_TABLES[group]} in {RETRIEVERS_DOC.name}"
    columns: dict[str, tuple[str, dict[str, dict[str, str]]]] = {}
    for header, rows in found:
        by_key = {ticked(r[header[0]])[0]: r for r in rows}
        for h in header[1:]:
            if ticked(h):
                assert ticked(h)[0] not in columns, f"{ticked(h)[0]} in two README tables"
                columns[ticked(h)[0]] = (h, by_key)
    assert set(columns) == options(group), f"README {group} table columns vs conf/{group}/"
    for option, (column, by_key) in columns.items():
        keys = option_keys(CONF / group / f"{option}.yaml")
        documented = {k for k, r in by_key.items() if r[column] != DASH}
        assert documented == set(keys), f"README {group} table, column {option!r} vs its keys"
        for key, value in keys.items():
            cell = by_key[key][column]
            if isinstance(value, dict):
                parts = set(value)
            elif isinstance(value, list) and all(isinstance(v, dict) for v in value):
                parts = {str(v.get("_target_", "")).split(".")[-2] for v in value}
            else:
                assert ticked(cell)[:1] == [render(value)], f"{group}={option} {key}: {cell!r}"
                continue
            assert parts <= set(ticked(cell)), f"{group}={option} {key}: {cell!r} vs {parts}"


# ------------------------------------------------------------- logged to MLflow


def param_groups() -> set[str]:
    """The config groups logged as MLflow params, as the code names them."""
    for path in sorted((ROOT / "harness").rglob("*.py")):
        match = re.search(r"^PARAM_GROUPS\b[^=]*=\s*\(([^)]*)\)", read(path), re.MULTILINE)
        if match:
            return set(re.findall(r"[\"'](\w+)[\"']", match.group(1)))
    pytest.fail("no PARAM_GROUPS = (...) in harness/: point this test at the logged groups")


def test_logged_params_row_names_the_logged_groups() -> None:
    rows = {r["logged as"]: r for r in table(read(OUTPUTS_DOC), "logged as")}
    assert set(rows) == {"params", "metrics", "tags", "artifacts"}
    named = {w for w in ticked(rows["params"]["what"]) if re.fullmatch(r"\w+", w)}
    config = load_yaml(CONF / "config.yaml")
    assert named <= set(groups()) | set(config), "params row names something not in conf/"
    assert param_groups() <= named, "params row misses a group the code logs"
    metrics = set(ticked(rows["metrics"]["what"]))
    assert render(config["run"]["objective"]) in metrics  # the default objective is logged
    if config["run"].get("retrieval_ks"):
        assert {"recall_at_<k>", "ndcg_at_<k>", "mrr"} <= metrics
    artifacts = set(ticked(rows["artifacts"]["what"]))
    assert {"config.yaml", "samples.jsonl", "summary.json"} <= artifacts


# ------------------------------------------------------------------------ layout


def _ignored(name: str) -> bool:
    """Whether .gitignore ignores the top-level folder ``name`` (``/outputs/`` included: the
    folders the README's own commands create in the clone must not fail this check)."""
    patterns = [p.strip().strip("/") for p in read(ROOT / ".gitignore").splitlines()]
    return any(p and not p.startswith("#") and fnmatch(name, p) for p in patterns)


def _tracked_tops() -> set[str] | None:
    """The top-level folders that hold a file git tracks (a user's own ``mypkg/`` or the
    README's ``outputs/`` in the clone are not the project's), or ``None`` outside git."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                check=True, timeout=60).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return None
    return {path.split("/", 1)[0] for path in listed.split("\0") if "/" in path}


def test_layout_names_every_folder_and_group() -> None:
    block = section(read(DEVELOPMENT_DOC), "## Layout").split("```", 2)[1]
    conf_text = block.split("conf/", 1)[1].split("\ndocs/", 1)[0]
    named_groups = set(re.findall(r"[\w/]+", conf_text.split("(", 1)[1].split(")", 1)[0]))
    assert named_groups == set(groups()) - {"hydra"}, "Layout's conf/ groups vs conf/"
    tracked = _tracked_tops()
    top = {
        p.name for p in ROOT.iterdir()
        if p.is_dir() and not p.name.startswith(".") and not _ignored(p.name)
        and p.name != "shared" and (tracked is None or p.name in tracked)
    }
    for name in top:
        assert re.search(rf"^{re.escape(name)}/", block, re.MULTILINE), f"Layout lacks {name}/"
    harness_text = block.split("harness/", 1)[1].split("\ntests/", 1)[0]
    packages = {
        p.name for p in (ROOT / "harness").iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    assert packages <= set(re.findall(r"(\w+)/", harness_text)), "Layout's harness/ folders"
    assert ".ci/run" in block and (ROOT / ".ci" / "run").is_file()


# -------------------------------------------------------------- links and names


def md_slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's ``toc``) gives a heading: markup dropped,
    ASCII word characters, spaces and hyphens kept, runs of them one hyphen."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(doc: Path) -> set[str]:
    """The anchors of ``doc``'s headings, as GitHub and as MkDocs make them (a link must
    work in both, so it must be in both)."""
    headings = re.findall(r"^#{1,6} (.+)$", strip_fences(read(doc)), re.MULTILINE)
    return {github_slug(re.sub(r"`|\[|\]\([^)]*\)", "", h)) for h in headings} & {
        md_slug(h) for h in headings
    }


def links(doc: Path) -> list[str]:
    """The relative link targets of ``doc``'s prose (``](target)``), web links left out."""
    found = re.findall(r"\]\(([^)\s]+)\)", strip_fences(read(doc)))
    return [t for t in found if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_reaches_a_file_and_heading(doc: Path) -> None:
    dead = []
    for target in links(doc):
        path, _, anchor = target.partition("#")
        where = (doc.parent / path).resolve() if path else doc
        no_heading = anchor and (where.suffix != ".md" or anchor not in anchors(where))
        if not where.exists() or no_heading:
            dead.append(target)
    assert not dead, f"{doc.name}: links to no file or heading: {dead}"


def test_links_into_the_site_stay_inside_it() -> None:
    """A page links only to pages (outside files are named as paths, which the path check
    reads): the site has no copy of what lies outside docs/."""
    outside = [
        (page.name, target) for page in PAGES for target in links(page)
        if target.partition("#")[0]
        and DOCS not in (page.parent / target.partition("#")[0]).resolve().parents
    ]
    assert not outside, f"pages link outside docs/: {outside}"


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav lists, in order."""
    def walk(node: Any) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, list):
            return [p for item in node for p in walk(item)]
        if isinstance(node, dict):
            return [p for value in node.values() for p in walk(value)]
        return []

    return walk(load_yaml(ROOT / "mkdocs.yml")["nav"])


def test_every_page_is_in_the_nav_once() -> None:
    nav = nav_pages()
    pages = sorted(p.relative_to(DOCS).as_posix() for p in PAGES)
    assert sorted(nav) == pages, "mkdocs.yml nav vs the pages under docs/"
    assert len(nav) == len(set(nav))


def test_readme_links_every_page() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(README_PATH)}
    missing = [p.relative_to(ROOT).as_posix() for p in PAGES
               if p.resolve() not in linked and p.name != "changelog.md"]
    assert not missing, f"the README's Documentation list lacks {missing}"
    assert (ROOT / "CHANGELOG.md").resolve() in linked
    assert (ROOT / "CONTRIBUTING.md").resolve() in linked


def test_readme_is_at_most_12_kib() -> None:
    size = README_PATH.stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move text into docs/"


def test_site_changelog_includes_the_changelog() -> None:
    assert '--8<-- "CHANGELOG.md"' in read(DOCS / "changelog.md")
    assert (ROOT / "CHANGELOG.md").is_file()


#: Names the docs make up for their examples (NAME: a placeholder).
EXAMPLES = ("first_hit", "my_search", "NAME")


def checked_text(doc: Path) -> str:
    """The prose of ``doc`` (fenced code left out) plus the architecture sketch."""
    text = read(doc)
    extra = ""
    if doc == ARCHITECTURE_DOC:
        extra = text.split("```", 2)[1]
    return strip_fences(text) + "\n" + extra


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_named_in_docs_exist(doc: Path) -> None:
    text = checked_text(doc)
    spans = re.findall(r"`([^`\n]+)`", text) + re.findall(r"\]\(([^)#]+)[)#]", text)
    spans += re.findall(r"(?<![\w/.])(?:harness|conf)/[\w/]+\.(?:py|yaml)\b", text)
    named = [
        span for span in spans
        if re.fullmatch(r"(harness|conf|tests|benchmarks|docs|experiments|\.ci)/[\w./*-]*", span)
        and not any(e in span for e in EXAMPLES)
    ]
    missing = [s for s in named if not (any(ROOT.glob(s)) if "*" in s else (ROOT / s).exists())]
    assert not missing, f"{doc.name} names paths that do not exist: {sorted(set(missing))}"


def defines(name: str) -> bool:
    """Whether ``harness.a.b.Name`` is a module, or an attribute of the longest module in
    it (imported: a package that re-exports a name defines it too)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        base = ROOT.joinpath(*parts[:cut])
        if not (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
            continue
        value: Any = importlib.import_module(module)
        for attr in parts[cut:]:
            if not hasattr(value, attr):
                return False
            value = getattr(value, attr)
        return True
    return False


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_dotted_names_in_docs_exist(doc: Path) -> None:
    """``harness.a.b.Name`` in a doc is a module that defines (or re-exports) ``Name``."""
    missing = []
    for name in set(re.findall(r"\bharness(?:\.\w+)+", read(doc))):
        parts = name.split(".")
        if any(e in name for e in EXAMPLES):
            continue
        if len(parts) < 3 and not any(p[:1].isupper() for p in parts):
            continue  # harness.evaluate, harness.compare, tag names such as harness.version
        if not defines(name):
            missing.append(name)
    assert not missing, f"{doc.name} names what harness/ does not define: {sorted(set(missing))}"


# ------------------------------------------------------------------ docs/metrics.md


METRICS = read(METRICS_DOC)


def test_readme_points_to_metrics_doc() -> None:
    assert "(docs/reference/metrics.md)" in README


def test_metrics_doc_variant_table_matches_conf() -> None:
    target_column = "`_target_` (conf/metric/)"
    rows = {ticked(r["option"])[0]: r for r in table(METRICS, "option", target_column)}
    assert set(rows) == options("metric"), "docs/metrics.md variant table vs conf/metric/"
    for option, row in rows.items():
        target = load_yaml(CONF / "metric" / f"{option}.yaml")["_target_"]
        assert ticked(row[target_column]) == [target], option


def test_metrics_doc_eps_defaults_match_conf() -> None:
    rows = {ticked(r["option"])[0]: r for r in table(METRICS, "option", "default `eps`")}
    ranked = {o for o in options("metric") if "eps" in load_yaml(CONF / "metric" / f"{o}.yaml")}
    ranked -= {o for o in ranked
               if load_yaml(CONF / "metric" / f"{o}.yaml").get("aggregate") == "set_precision"}
    assert set(rows) == ranked
    for option, row in rows.items():
        eps = load_yaml(CONF / "metric" / f"{option}.yaml")["eps"]
        assert float(ticked(row["default `eps`"])[0]) == float(eps), option


def test_metrics_doc_reference_values_are_what_the_code_returns() -> None:
    from harness.metrics.ranking import average_precision

    rows = table(METRICS, "verdicts")
    assert len(rows) >= 10
    for row in rows:
        verdicts = yaml.safe_load(ticked(row["verdicts"])[0])
        for column, eps in (("ragas (`eps` 1e-10)", 1e-10), ("deepeval (`eps` 0)", 0.0)):
            if row[column] != DASH:
                assert repr(average_precision(verdicts, eps)) == ticked(row[column])[0], (
                    verdicts, column,
                )


def test_metrics_doc_names_every_metric_option_setting() -> None:
    """Every setting of a metric option is explained as ``metric.<key>`` or in its section."""
    for option in options("metric"):
        for key in option_keys(CONF / "metric" / f"{option}.yaml"):
            if key in ("name", "judge", "prompt"):
                continue
            assert f"metric.{key}" in METRICS or f"`{key}`" in METRICS, (option, key)


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_compile(doc: Path) -> None:
    for block in re.findall(r"^```python\n(.*?)^```", read(doc), re.DOTALL | re.MULTILINE):
        compile(block, doc.name, "exec")


def test_extending_metric_example_scores() -> None:
    """The extending page's example metric runs as written."""
    block = read(EXTENDING_DOC).split("```python", 1)[1]
    namespace: dict[str, Any] = {}
    exec(block.split("```", 1)[0], namespace)  # noqa: S102 - the page's own example
    from harness.core.types import RagSample

    metric = namespace["FirstHit"]("first_hit")
    results = metric.score_batch([
        RagSample("a", retrieved_context_ids=("x", "y"), reference_context_ids=("y",)),
        RagSample("b", retrieved_context_ids=("x",), reference_context_ids=("z",)),
        RagSample("c", retrieved_context_ids=("x",)),
    ])
    assert [r.score for r in results] == [0.5, 0.0, None]


# ------------------------------------------------------- Python and extension API pages


def signature(obj: Any) -> list[tuple[str, str, Any]]:
    """``(kind, name, default)`` of each parameter (hints left out, as the page shows)."""
    return [(p.kind.name, p.name, p.default) for p in inspect.signature(obj).parameters.values()]


def test_python_api_page_signatures_are_the_code() -> None:
    import ast

    import harness
    from harness.compare import compare

    text = read(DOCS / "reference" / "python-api.md")
    headed = re.findall(r"^## (harness\.[\w.]+)$", text, re.MULTILINE)
    blocks = [(name, code.group(1)) for name in headed
              if (code := re.search(r"```python\n(.*?)```", section(text, f"## {name}"),
                                    re.DOTALL))]
    objects = {"harness.evaluate": harness.evaluate, "harness.aevaluate": harness.aevaluate,
               "harness.compare.compare": compare}
    assert {name for name, _ in blocks} == set(objects), "a signature block per function"
    for name, code in blocks:
        (node,) = ast.parse(code).body
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)), name
        namespace: dict[str, Any] = {}
        exec(code, namespace)  # noqa: S102 - the page's own signature, a stub
        assert signature(namespace[node.name]) == signature(objects[name]), name
        assert isinstance(node, ast.AsyncFunctionDef) == inspect.iscoroutinefunction(
            objects[name]
        ), name


def test_extension_api_table_is_harness_extend_all() -> None:
    import harness.extend

    rows = table(read(DOCS / "reference" / "extension-api.md"), "name")
    assert [ticked(r["name"])[0] for r in rows] == list(harness.extend.__all__)


# ------------------------------------------------- config keys named anywhere in the docs


#: The groups whose keys the docs name as ``group.key``.
KEY_GROUPS = ("run", "dataset", "retriever", "rerank", "metric", "judge", "task", "tracking",
              "prompt")
#: ``group.key`` spans that name an output (a summary field, tag or file), a placeholder or
#: another library's method, not a setting.
NOT_SETTINGS = {
    "dataset.sha256", "prompt.sha256", "prompt.version", "prompt.mode", "prompt.yaml",
    "judge.served_model", "judge.soft_fallbacks", "judge.cached_prompt_tokens",
    "judge.agreement", "judge.bill", "retriever.KEY", "retriever._target_", "retriever.batch",
}


def documented_defaults() -> dict[str, set[str]]:
    """``group.key -> its defaults`` over the group's options, as config.md lists them."""
    out: dict[str, set[str]] = {}
    for header, rows in tables(CONFIG):
        if header[:2] == ["key", "default"]:
            for row in rows:
                default = ticked(row["default"])
                out.setdefault(ticked(row["key"])[0], set()).add(
                    default[0] if default else row["default"]
                )
    return out


def named_keys(doc: Path) -> set[str]:
    """The ``group.key`` settings ``doc`` names: backticked in prose, or overridden in a
    shell block (``retriever.k1=1.2``)."""
    text = read(doc)
    spans = re.findall(r"`\+{0,2}([a-z_]+\.[\w.]+)(?:=[^`]*)?`", strip_fences(text))
    for block in re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        spans += re.findall(r"(?<![\w./~-])'?\+{0,2}([a-z_]+\.[\w.]+)=", block)
    return {s for s in spans if s.split(".")[0] in KEY_GROUPS}


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_setting_named_is_a_key_of_conf(doc: Path) -> None:
    keys = set(documented_defaults())
    unknown = sorted(
        name for name in named_keys(doc)
        if ".".join(name.split(".")[:2]) not in keys and name not in NOT_SETTINGS
    )
    assert not unknown, f"{doc.name} names settings conf/ does not have: {unknown}"


def stated_defaults(text: str) -> list[tuple[str, str]]:
    """``(group.key, V)`` for each "`group.key` (default `V`)" in ``text``."""
    key = rf"`((?:{'|'.join(KEY_GROUPS)})\.\w+)(?:=[^`]*)?`"
    value = r"\(default:?\s*(?:`([^`]+)`|([^`\s),;]+))\s*[;)]"
    return [(k, quoted or bare) for k, quoted, bare in re.findall(key + r"\s*" + value, text)]


def wrong_defaults(text: str) -> list[tuple[str, str, list[str]]]:
    defaults = documented_defaults()
    return [(key, value, sorted(defaults.get(key, ()))) for key, value in stated_defaults(text)
            if value not in defaults.get(key, ())]


@pytest.mark.parametrize("doc", ALL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_default_stated_is_the_default(doc: Path) -> None:
    """``group.key`` (default ``V``) anywhere in the docs: V is its default in conf/ (for
    one of the group's options)."""
    wrong = wrong_defaults(read(doc))
    assert not wrong, f"{doc.name}: (default ...) that conf/ does not have: {wrong}"


def test_the_default_check_catches_stale_defaults() -> None:
    """The stale line of issue 23, and its kind in other words, fail the check; the
    true ones pass."""
    stale = ("for each `run.retrieval_ks`\n  (default `[10]`), and `mrr`;"
             " `metric.threshold` (default 0.7); `retriever.top_k=3` (default: `5`)")
    assert [w[:2] for w in wrong_defaults(stale)] == [
        ("run.retrieval_ks", "[10]"), ("metric.threshold", "0.7"), ("retriever.top_k", "5")
    ]
    true = "`run.retrieval_ks` (default `[5, 10]`; ...) and `metric.threshold` (default 0.5)"
    assert stated_defaults(true) == [("run.retrieval_ks", "[5, 10]"),
                                     ("metric.threshold", "0.5")]
    assert wrong_defaults(true) == []


def test_link_and_key_checks_can_fail(tmp_path: Path) -> None:
    """The readers behind the link and setting checks find what is wrong in a page."""
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A `retriever=chroma` server\n")
    page.write_text(
        "# Page\n\n[ok](other.md#a-retrieverchroma-server) [gone](nope.md) "
        "[no heading](other.md#missing) [web](https://hydra.cc)\n\n"
        "Set `run.retrieval_k=5` and `retriever.top_k` (default `10`).\n\n"
        "```bash\npython -m harness retriever.nope=1 'metric.eps=0'\n```\n"
    )
    assert links(page) == ["other.md#a-retrieverchroma-server", "nope.md", "other.md#missing"]
    assert "a-retrieverchroma-server" in anchors(tmp_path / "other.md")
    assert "missing" not in anchors(tmp_path / "other.md")
    assert named_keys(page) == {"run.retrieval_k", "retriever.top_k", "retriever.nope",
                                "metric.eps"}
    keys = set(documented_defaults())
    assert {"retriever.top_k", "metric.eps"} <= keys
    assert not {"run.retrieval_k", "retriever.nope"} & keys
    assert stated_defaults(read(page)) == [("retriever.top_k", "10")]
    assert wrong_defaults(read(page)) == []  # 10: bm25's, dense's and hybrid's top_k
