"""Issue 12, class 6: a config or a prompt file never runs code the user did not configure
as code. Prompt templates render in Jinja's sandbox; a ``_target_`` must name one of the
harness's component classes, checked before anything is imported."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CONF, CliResult, run_cli, run_cli_subprocess, sample_labels
from helpers.errors import fails
from helpers.judge_server import JudgeServer

from harness.core.errors import ConfigError
from harness.core.trust import component_targets
from harness.prompts.template import PromptFile, PromptTemplate

SHIPPED = yaml.safe_load((CONF / "prompt" / "llm_with_reference.yaml").read_text("utf-8"))


one_error_line = fails


# -- prompt templates run in the sandbox ---------------------------------------------------


def prompt_file(tmp_path: Path, **parts: str) -> Path:
    """A copy of the shipped pointwise prompt with some templates replaced."""
    data = {k: v for k, v in SHIPPED.items() if k != "_target_"}
    data.update(parts)
    path = tmp_path / "evil_prompt.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


def run_with_prompt(tmp_path: Path, server: JudgeServer, path: Path, *extra: str) -> CliResult:
    return run_cli(
        "metric=llm_with_reference", "prompt=file", f"prompt.path={path}", "judge=local",
        f"judge.base_url={server.base_url}", "judge.model=test-judge", "tracking=none",
        *extra, cwd=tmp_path,
    )


def touch(marker: Path) -> str:
    return f"touch {marker}"


@pytest.mark.parametrize(
    ("part", "template", "shown"),
    [
        # the example: a global's function reaches os through its globals
        ("user", "{{ question }} {{ cycler.__init__.__globals__.os.system('CMD') }}",
         "{{ cycler.__init__.__globals__.os.system('CMD') }}"),
        # from any literal to every class in the interpreter (subprocess.Popen among them)
        ("system", "{{ ''.__class__.__mro__[1].__subclasses__()[0]('CMD') }}",
         "{{ ''.__class__.__mro__[1].__subclasses__()[0]('CMD') }}"),
        # subscript and the attr filter reach attributes too
        ("user", "{{ question }}{{ lipsum['__globals__']['os'].system('CMD') }}",
         "lipsum['__globals__']"),
        ("user", "{{ question|attr('__class__') }}{{ context }}", "attr('__class__')"),
        # in a branch the real data may never take: refused all the same
        ("user", "{% if question == 'never' %}{{ self.__init__.__globals__.os.system('CMD') }}"
                 "{% endif %}{{ context }}", "self.__init__"),
        # a computed name: found by rendering in the sandbox at start-up
        ("user", "{{ question }}{{ lipsum[('_' ~ '_globals__')]['os'].system('CMD') }}",
         "unsafe"),
    ],
)
def test_a_prompt_file_cannot_run_code(
    tmp_path: Path, part: str, template: str, shown: str
) -> None:
    marker = tmp_path / "PWNED"
    path = prompt_file(tmp_path, **{part: template.replace("CMD", touch(marker))})
    with JudgeServer(sample_labels()) as server:
        result = run_with_prompt(tmp_path, server, path)
        assert server.stats.ok == 0  # stopped before any judge call
    line = one_error_line(result, str(path), f"({part})", shown.replace("CMD", touch(marker)))
    assert "not Python internals" in line
    assert not marker.exists()


def test_a_command_line_template_cannot_run_code(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    with JudgeServer(sample_labels()) as server:
        result = run_cli(
            "metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", "tracking=none",
            f"prompt.system='{{{{ cycler.__init__.__globals__.os.system(\"touch {marker}\") }}}}'",
            cwd=tmp_path,
        )
    one_error_line(result, "prompt pointwise_reference_v1 (system)", "cycler.__init__")
    assert not marker.exists()


def test_examples_and_reason_templates_are_sandboxed_too(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    evil = f"{{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}"
    examples = [{"inputs": {"question": "q", "answer": "a", "context": "c"}, "output": {}}]
    with pytest.raises(ConfigError, match=r"\(user\): unsafe expression"):
        PromptTemplate("v", "pointwise", "s", "{{ context }}" + evil, examples=examples)
    with pytest.raises(ConfigError, match=r"^prompt v \(reason\.user\): unsafe expression"):
        PromptTemplate("v", "listwise", "s", "{{ contexts }}",
                       reason={"system": "s", "user": "{{ score }}" + evil})
    assert not marker.exists()


def test_the_sandbox_blocks_what_the_start_up_checks_cannot_see() -> None:
    """A name computed from the data: only the sandbox, at the real call, can refuse it."""
    prompt = PromptTemplate("v", "pointwise", "s", "{{ question[context] }}")
    assert prompt.messages(question={"k": "v"}, answer="", context="k")[-1]["content"] == "v"
    with pytest.raises(ConfigError, match=r"^prompt v \(user\): .*unsafe"):
        prompt.messages(question="q", answer="", context="__class__")
    with pytest.raises(ConfigError, match="unsafe"):  # immutable: a template changes nothing
        PromptTemplate("v", "pointwise", "s", "{{ question }}{{ [].append(1) }}{{ context }}")


def test_ordinary_jinja_still_renders(tmp_path: Path) -> None:
    user = (
        "<question>\n{{ question|upper }}\n</question>\n\n<answer>\n{{ answer }}\n</answer>\n\n"
        "{% set n = context|length %}<context>\n{{ context }}\n</context>\n{{ n > 0 }}"
    )
    prompt = PromptTemplate("v", "pointwise", "s", user)
    content = prompt.messages(question="Why?", answer="a", context="ctx")[-1]["content"]
    assert content.startswith("<question>\nWHY?\n</question>") and content.endswith("True")


def test_prompt_file_is_a_class_target_and_runs_end_to_end(tmp_path: Path) -> None:
    path = prompt_file(tmp_path)
    assert "PromptFile" in (CONF / "prompt" / "file.yaml").read_text("utf-8")
    assert inspect.isclass(PromptFile) and issubclass(PromptFile, PromptTemplate)
    with JudgeServer(sample_labels()) as server:
        result = run_with_prompt(tmp_path, server, path)
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    assert summary["prompt"]["path"] == str(path)
    assert summary["prompt"]["version"] == SHIPPED["version"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"\xff\xfe not utf-8", "cannot read it"),
        (b"version: [unclosed", "not valid YAML"),
        (b"- a list\n", "expected a mapping of prompt keys"),
        (b"version: v\nmode: pointwise\nsystem: s\nuser: '{{ context }}'\nexamples: [1]\n",
         "prompt.examples: expected"),
    ],
)
def test_a_bad_prompt_file_is_one_line(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(content)
    with JudgeServer(sample_labels()) as server:
        result = run_with_prompt(tmp_path, server, path)
    one_error_line(result, fragment)


def test_a_folder_as_prompt_file_is_one_line(tmp_path: Path) -> None:
    with JudgeServer(sample_labels()) as server:
        result = run_with_prompt(tmp_path, server, tmp_path)
    one_error_line(result, "prompt.path", "file not found")


# -- _target_ names a component class, checked before any import -------------------------

EVIL = "harness_field12_evil"


@pytest.fixture
def evil_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module in the working directory (and on sys.path) whose import leaves a marker."""
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{EVIL}.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "class Thing:\n    def __init__(self, *a, **k):\n        pass\n"
        "def x(*a, **k):\n    return Thing()\n",
        "utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, EVIL, raising=False)
    return marker


@pytest.mark.parametrize(
    "args",
    [
        [f"dataset._target_={EVIL}.x"],
        [f"metric._target_={EVIL}.Thing"],
        [f"retriever._target_={EVIL}.x"],
        [f"tracking._target_={EVIL}.x"],
        [f"task._target_={EVIL}.x"],
        ["metric=llm_with_reference", "judge.model=m", f"judge._target_={EVIL}.x"],
        [f"+dataset.extra={{_target_: {EVIL}.x}}"],
        [f"+dataset.extra=[1, {{_target_: {EVIL}.x}}]"],
        [f"+retriever.deep={{a: {{b: {{_target_: {EVIL}.x}}}}}}"],
        [f"+run._target_={EVIL}.x"],
    ],
)
def test_an_outside_target_is_refused_before_it_is_imported(
    tmp_path: Path, evil_module: Path, args: list[str]
) -> None:
    result = run_cli(*args, "tracking=none", cwd=tmp_path)
    line = one_error_line(result, "_target_")
    assert "not a harness component" in line or "not a setting" in line
    assert not evil_module.exists(), "the module was imported"
    assert EVIL not in sys.modules


@pytest.mark.slow
def test_an_outside_target_is_not_imported_by_a_real_process(
    tmp_path: Path, evil_module: Path
) -> None:
    result = run_cli_subprocess(f"dataset._target_={EVIL}.x", "tracking=none", cwd=tmp_path)
    one_error_line(result, f"dataset._target_: '{EVIL}.x' is not a harness component")
    assert not evil_module.exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["dataset._target_=harness.cli.cache.main"], "dataset._target_: 'harness.cli.cache.main'"),
        (["task._target_=harness.cli.job.main"], "task._target_: 'harness.cli.job.main'"),
        (["metric._target_=harness.judges.cache.VerdictCache"], "VerdictCache"),
        (["retriever._target_=harness.retrievers.rerank.RerankStage"], "RerankStage"),
        (["dataset._target_=harness.prompts.template.PromptTemplate.from_file"], "from_file"),
        (["dataset._target_=os.system"], "'os.system'"),
        (["retriever._target_=harness.retrievers.precomputed.Precomputd"],
         "did you mean 'harness.retrievers.precomputed.Precomputed'"),
        (["+metric.judge={_target_: harness.cli.cache.main}"], "metric.judge._target_"),
    ],
)
def test_functions_and_helper_classes_of_the_package_are_refused(
    tmp_path: Path, args: list[str], fragment: str
) -> None:
    cache = tmp_path / "cache"
    result = run_cli(*args, "tracking=none", cwd=tmp_path, env={"XDG_CACHE_HOME": str(cache)})
    one_error_line(result, "is not a harness component", fragment)
    assert not cache.exists()


@pytest.mark.parametrize("key", ["_args_", "_partial_", "_convert_"])
def test_hydra_instantiation_keys_are_not_settings(tmp_path: Path, key: str) -> None:
    value = "[1]" if key == "_args_" else ("true" if key == "_partial_" else "none")
    result = run_cli(f"+metric.{key}={value}", "tracking=none", cwd=tmp_path)
    one_error_line(result, f"metric.{key}: not a setting")


def test_the_allow_list_is_exactly_the_component_classes() -> None:
    """Every ``harness`` target ``conf/`` names is on it, and every entry is a class defined
    where it is named (not a function, not a re-export)."""
    from hydra.utils import get_method

    def targets(node: object) -> list[str]:
        if isinstance(node, dict):
            own = [str(node["_target_"])] if "_target_" in node else []
            return own + [t for v in node.values() for t in targets(v)]
        if isinstance(node, list):
            return [t for v in node for t in targets(v)]
        return []

    named = {
        t for p in CONF.rglob("*.yaml")
        for t in targets(yaml.safe_load(p.read_text("utf-8")) or {}) if t.startswith("harness.")
    }
    assert named == set(component_targets())  # derived from conf/: nothing else
    assert len(set(component_targets())) == len(component_targets())
    for name in component_targets():
        assert "*" not in name
        found = get_method(name)
        assert inspect.isclass(found), name
        # the class itself, defined in that room (a package exports its component class)
        assert found.__module__.startswith(name.rpartition(".")[0]), name
        assert found.__qualname__ == name.rpartition(".")[2], name
