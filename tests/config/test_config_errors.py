"""Issue 24, class 5: a config problem is one ``error:`` line naming the file and line, or the
key, never Hydra's traceback: a YAML syntax error in the user's own config file, a Hydra
callback or a logging factory its execution whitelist refuses (from the command line or from
an experiment file), a logging config that does not configure, a config folder that is not
there. Exit codes: 1 Hydra could not compose (a config file that is not YAML), 2 a setting
refused or bad.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import TEST_DATA, CliResult, run_cli

BEIR = ("dataset=beir", f"dataset.path={TEST_DATA / 'beir_tiny'}", "metric=id_ranked",
        "tracking=none")


def one_line(result: CliResult, code: int, *fragments: str) -> str:
    """Exit ``code``, stderr exactly one ``error:`` line holding every fragment, no rows."""
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (result.out_dir / "samples.jsonl").exists()
    return lines[0]


def user_conf(cwd: Path, files: dict[str, str]) -> str:
    """Write the user's own config files under ``cwd/conf``; the searchpath override."""
    for name, text in files.items():
        path = cwd / "conf" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), "utf-8")
    return f"hydra.searchpath=[file://{cwd / 'conf'}]"


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        # the example: an unclosed flow list; PyYAML notices on the next line
        ("retriever/mine.yaml", "_target_: harness.retrievers.bm25.BM25\nk1: [1.2\nb: 0.7\n", 3),
        # a tab where YAML wants spaces
        ("retriever/mine.yaml", "_target_: harness.retrievers.bm25.BM25\nk1:\n\t- 1\n", 3),
        # a bad indentation in an experiment file
        ("experiment/mine.yaml", "# @package _global_\nrun:\n  limit: 2\n limit: 3\n", 4),
    ],
)
def test_a_yaml_error_in_a_user_config_names_file_and_line(
        tmp_path: Path, name: str, text: str, line: int) -> None:
    searchpath = user_conf(tmp_path, {name: text})
    group, option = name.removesuffix(".yaml").split("/")
    result = run_cli(*BEIR, searchpath, f"{group}={option}", cwd=tmp_path)
    found = one_line(result, 1, f"{tmp_path / 'conf' / name}, line {line}", "not valid YAML")
    assert "hint:" not in result.stderr and "hydra.searchpath" not in found


@pytest.mark.parametrize(
    "override",
    [
        "+hydra.callbacks.x={_target_: os.system, command: 'touch PWNED'}",  # the issue's
        "+hydra.callbacks.x={'_target_': 'subprocess.run', args: [touch, PWNED]}",
        "+hydra.callbacks={x: {_target_: os.system, command: 'touch PWNED'}}",
        "+hydra.callbacks.x._target_=os.system",
    ],
)
def test_a_callback_on_the_command_line_is_refused_in_one_line(
        tmp_path: Path, override: str) -> None:
    result = run_cli(*BEIR, override, cwd=tmp_path)
    one_line(result, 2, "hydra.callbacks", "_target_", "nothing was imported")
    assert not (tmp_path / "PWNED").exists()


def test_a_logging_factory_on_the_command_line_is_refused(tmp_path: Path) -> None:
    for override in ("+hydra.job_logging.formatters.evil={'()': os.system}",
                     "+hydra.hydra_logging.formatters.evil={'()': builtins.exec}"):
        result = run_cli(*BEIR, override, cwd=tmp_path)
        one_line(result, 2, "formatters.evil", "logging factory", "nothing was called")


def test_callbacks_and_logging_factories_in_an_experiment_file(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    searchpath = user_conf(tmp_path, {
        "experiment/callback.yaml": f"""
            # @package _global_
            hydra:
              callbacks:
                evil:
                  _target_: os.system
                  command: touch {marker}
        """,
        "experiment/formatter.yaml": f"""
            # @package _global_
            hydra:
              job_logging:
                formatters:
                  evil:
                    (): os.system
                    command: touch {marker}
        """,
    })
    result = run_cli(*BEIR, searchpath, "experiment=callback", cwd=tmp_path)
    one_line(result, 2, "hydra.callbacks.evil._target_: 'os.system' is refused",
             "nothing was called")
    result = run_cli(*BEIR, searchpath, "experiment=formatter", cwd=tmp_path)
    one_line(result, 2, "hydra.job_logging.formatters.evil: 'os.system' is refused",
             "nothing was called")
    assert not marker.exists()


@pytest.mark.slow
def test_a_logging_config_that_does_not_configure(tmp_path: Path) -> None:
    result = run_cli(*BEIR, "hydra.job_logging.formatters.simple.format='%(nope'", cwd=tmp_path)
    line = one_line(result, 2, "hydra.job_logging.formatters.simple: ")
    assert "format" in line.lower()
    result = run_cli(*BEIR, "hydra.hydra_logging.formatters.simple.format=x", cwd=tmp_path)
    one_line(result, 2, "hydra.hydra_logging.formatters.simple: Invalid format 'x'")
    # the folder the failed command claimed is free again: the same folder runs next time
    out = result.out_dir
    again = run_cli(*BEIR, "retriever=bm25", f"hydra.run.dir={out}", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (out / "summary.json").is_file()


def test_config_folders_that_are_not_there(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = run_cli(*BEIR, f"hydra.searchpath=[file://{missing}]", cwd=tmp_path)
    one_line(result, 2, f"hydra.searchpath: file://{missing} is not a folder")
    result = run_cli(*BEIR, "hydra.searchpath=[pkg://harness.conf,file://conf]", cwd=tmp_path)
    one_line(result, 2, "hydra.searchpath: file://conf is not a folder", str(tmp_path))
    for args in ([f"--config-dir={missing}"], ["--config-dir", str(missing)],
                 ["-cd", str(missing)]):
        result = run_cli(*args, *BEIR, cwd=tmp_path)
        one_line(result, 2, f"--config-dir: '{missing}' is not a folder")


def test_a_bad_objective_interpolation_is_one_line(tmp_path: Path) -> None:
    result = run_cli(*BEIR, "retriever=bm25", "run.objective=${nope}", cwd=tmp_path)
    one_line(result, 2, "run: Interpolation key 'nope' not found")


def test_a_sweeper_or_launcher_target_in_an_experiment_file(tmp_path: Path) -> None:
    searchpath = user_conf(tmp_path, {
        "experiment/sweeper.yaml": "# @package _global_\nhydra:\n  sweeper:\n"
                                   "    _target_: os.system\n",
        "experiment/launcher.yaml": "# @package _global_\nhydra:\n  launcher:\n"
                                    "    _target_: subprocess.run\n",
    })
    for name, key, target in (("sweeper", "hydra.sweeper", "os.system"),
                              ("launcher", "hydra.launcher", "subprocess.run")):
        sweep = tmp_path / f"sweep-{name}"
        result = run_cli("-m", *BEIR, searchpath, f"experiment={name}",
                         f"hydra.sweep.dir={sweep}", cwd=tmp_path)
        one_line(result, 2, f"{key}._target_: ", f"'{target}'", "nothing was called")
        assert result.stdout.strip() == ""  # no ranking of a sweep that never ran
        assert not (sweep / "report.html").exists()


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("hydra.run.dir=o/${nope}", "hydra.run.dir"),  # Hydra made the guard's error a warning
        ("hydra.run.dir=o/${oc.env:HARNESS_TEST_UNSET_VAR}", "hydra.run.dir"),
        ("hydra.job.chdir=${nope}", "hydra.job.chdir"),
        ("hydra.verbose=${nope}", "hydra.verbose"),
        ("+hydra.job.env_set.X=${nope}", "hydra.job.env_set.X"),
        ("hydra.output_subdir=${nope}", "hydra.output_subdir"),
        ("dataset.path=${oc.env:HARNESS_TEST_UNSET_VAR}", "dataset"),
    ],
)
def test_an_interpolation_that_does_not_resolve_names_its_key(
        tmp_path: Path, override: str, key: str) -> None:
    result = run_cli(*BEIR, "retriever=bm25", override, cwd=tmp_path)
    line = one_line(result, 2, f"error: {key}: ")
    assert "nope" in line or "HARNESS_TEST_UNSET_VAR" in line
    assert not list(tmp_path.glob("o/*"))


def test_a_sweep_folder_that_does_not_resolve(tmp_path: Path) -> None:
    result = run_cli("-m", *BEIR, "retriever=bm25", "hydra.sweep.dir=${nope}", cwd=tmp_path)
    one_line(result, 2, "error: hydra.sweep.dir: Interpolation key 'nope' not found")
    assert result.stdout.strip() == ""


@pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "PYTHONWARNINGS",
                                  "DYLD_INSERT_LIBRARIES"])
def test_env_set_never_makes_processes_load_code(tmp_path: Path, name: str) -> None:
    result = run_cli(*BEIR, "retriever=bm25", f"+hydra.job.env_set.{name}={tmp_path}/x",
                     cwd=tmp_path)
    one_line(result, 2, f"error: hydra.job.env_set.{name}: refused: it makes processes load")
    result = run_cli("-m", *BEIR, "retriever=bm25", f"+hydra.job.env_set.{name}=x",
                     f"hydra.sweep.dir={tmp_path / 's'}", cwd=tmp_path)
    one_line(result, 2, f"error: hydra.job.env_set.{name}: refused")
    # an ordinary variable is set for the job, as Hydra does
    result = run_cli(*BEIR, "retriever=bm25", "+hydra.job.env_set.HARNESS_TEST_X=1",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
