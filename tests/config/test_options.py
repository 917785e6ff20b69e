"""Every option of every config group composes and instantiates."""

from pathlib import Path

import pytest
from conftest import CONF, shared_data
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.utils import execution_whitelist, instantiate
from omegaconf import OmegaConf

GROUPS = sorted(
    p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("hydra", "experiment")
)
OPTIONS = [(g, f.stem) for g in GROUPS for f in sorted((CONF / g).glob("*.yaml"))]
#: Options that instantiate only with an extra installed (the heavy lane has them all).
NEEDS_EXTRA = {("retriever", "dense"), ("retriever", "hybrid"), ("rerank", "dense"),
               ("retriever", "chroma")}
#: Options that name the user's own code, left ``???`` (their own tests run them end to end).
NEEDS_USER_CODE = {("retriever", "custom"): "_target_", ("retriever", "langchain"): "factory",
                   ("retriever", "llamaindex"): "factory"}
#: Options that name the user's own files or experiment, left ``???`` (their tests in
#: tests/datasets/ run them on real ones).
NEEDS_USER_DATA = {("dataset", "trec"): {"run", "qrels"}, ("dataset", "ir_datasets"): {"name"},
                   ("dataset", "mlflow_traces"): {"experiment_name"}}
NEEDS_PATH = {
    ("dataset", "jsonl"), ("dataset", "json"), ("dataset", "csv"), ("dataset", "beir"),
    ("dataset", "parquet"),
}

#: Options that read a full public data set (its folder in ../shared/data): the default lane
#: checks where they point, the shared_data lane that the data is there.
SHARED_SETS = {("dataset", "scifact"): "beir_scifact",
               ("dataset", "trec_dl19"): "trec_dl19_passage_subset",
               ("dataset", "dbpedia_entity"): "dbpedia_entity_subset"}


def package_of(group: str, option: str) -> str:
    """Where an option lands in the composed config: its ``# @package`` line, else its group."""
    for line in (CONF / group / f"{option}.yaml").read_text("utf-8").splitlines():
        if line.startswith("# @package "):
            return line.removeprefix("# @package ").strip()
    return group


def test_groups_present() -> None:
    assert {"dataset", "metric", "tracking"} <= set(GROUPS)
    assert ("metric", "id_based") in OPTIONS
    assert ("metric", "id_ranked") in OPTIONS
    assert ("metric", "non_llm") in OPTIONS


@pytest.mark.parametrize(
    ("group", "option"),
    [pytest.param(*o, marks=pytest.mark.heavy) if o in NEEDS_EXTRA else o for o in OPTIONS],
)
def test_option_composes_and_instantiates(group: str, option: str, tmp_path: Path) -> None:
    overrides = [f"{group}={option}", f"tracking.tracking_uri=sqlite:///{tmp_path}/m.db"]
    if group == "tracking" and option != "mlflow":
        overrides.pop()
    if (group, option) in NEEDS_PATH:
        overrides.append(f"dataset.path={tmp_path / 'f'}")
    if (group, option) == ("prompt", "file"):
        own = tmp_path / "my_prompt.yaml"
        own.write_text((CONF / "prompt" / "llm_with_reference.yaml").read_text())
        overrides.append(f"prompt.path={own}")
    if (group, option) == ("judge", "local"):
        overrides.append("judge.model=some-model")
    with initialize_config_dir(config_dir=str(CONF)), execution_whitelist("harness.*"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        if (group, option) in NEEDS_USER_CODE:
            missing = OmegaConf.missing_keys(OmegaConf.select(cfg, group))
            assert missing == {f"{group}.{NEEDS_USER_CODE[group, option]}"}
            return
        if (group, option) in NEEDS_USER_DATA:
            missing = OmegaConf.missing_keys(OmegaConf.select(cfg, group))
            assert missing == {f"{group}.{k}" for k in NEEDS_USER_DATA[group, option]}
            return
        obj = instantiate(OmegaConf.select(cfg, package_of(group, option)), _convert_="all")
    assert obj is not None
    if group == "metric":
        assert obj.name == option  # the option name is what outputs record
        obj.close()
    if (group, option) in SHARED_SETS:  # $HARNESS_SHARED_DATA/<set> (the lane's check below)
        assert obj.path == shared_data(SHARED_SETS[group, option])
    elif group == "dataset" and (group, option) not in NEEDS_PATH:
        obj.check()  # the bundled sample


@pytest.mark.parametrize("option", [pytest.param(o, marks=pytest.mark.shared_data(name))
                                    for (_, o), name in sorted(SHARED_SETS.items())])
def test_shared_data_set_is_where_its_option_points(option: str) -> None:
    with initialize_config_dir(config_dir=str(CONF)), execution_whitelist("harness.*"):
        cfg = compose("config", overrides=[f"dataset={option}"])
        dataset = instantiate(cfg.dataset, _convert_="all")
    assert dataset.path == shared_data(SHARED_SETS["dataset", option])
    dataset.check()  # the folder has every file the option reads
    assert dataset.estimate_count() > 0


EXPERIMENTS = sorted(f.stem for f in (CONF / "experiment").glob("*.yaml"))
#: Experiments whose config needs a Hydra plugin from an extra (the Optuna sweeper).
NEEDS_PLUGIN = {"scifact_bm25_optuna"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(e, marks=pytest.mark.heavy) if e in NEEDS_PLUGIN else e for e in EXPERIMENTS],
)
def test_experiment_composes(name: str) -> None:
    with initialize_config_dir(config_dir=str(CONF)):
        cfg = compose("config", overrides=[f"experiment={name}"], return_hydra_config=True)
    # its own MLflow experiment, or the study it completes (scifact_ann_hybrid: scifact_ann)
    assert name == cfg.experiment_name or name.startswith(f"{cfg.experiment_name}_")
    assert cfg.hydra.sweeper.params  # run with -m: Hydra 1.4 will not switch modes from a config
    for key in cfg.hydra.sweeper.params:  # every swept key exists in the composed config
        head = key.split(".")[0]
        assert head in cfg, key


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF)):
        return compose("config", overrides=list(overrides))


LLM_METRICS = {"llm_with_reference": "pointwise", "llm_without_reference": "pointwise",
               "contextual_precision": "listwise"}


@pytest.mark.parametrize("metric", sorted(LLM_METRICS))
def test_each_llm_metric_names_its_prompt_in_its_own_file(metric: str) -> None:
    """The prompt/metric pairing is visible in the metric's file, not a naming rule."""
    import yaml

    own = yaml.safe_load((CONF / "metric" / f"{metric}.yaml").read_text("utf-8"))
    [entry] = own["defaults"]
    [(key, name)] = entry.items()
    assert key == "override /prompt@_global_.prompt"
    assert (CONF / "prompt" / f"{name}.yaml").is_file()
    cfg = _compose(f"metric={metric}")
    assert cfg.prompt.mode == LLM_METRICS[metric]
    swapped = _compose(f"metric={metric}", "prompt=query_relevance")  # the command line wins
    assert swapped.prompt.version == "query_relevance_v1"


def test_a_metric_without_a_judge_composes_no_prompt() -> None:
    assert "prompt" not in _compose("metric=id_based")
    assert "version" in _compose("task=judge_agreement", "prompt=query_relevance").prompt


def test_every_run_setting_has_one_default() -> None:
    """conf/config.yaml's run block and RunSettings agree (the API builds RunSettings() too)."""
    import dataclasses

    from harness.core.settings import RunSettings

    run = OmegaConf.to_container(_compose().run)
    assert isinstance(run, dict)
    defaults = {f.name: getattr(RunSettings(), f.name) for f in dataclasses.fields(RunSettings)}
    assert run == defaults


@pytest.mark.parametrize("metric", ["id_based", "id_ranked"])
def test_min_grade_has_one_source(metric: str, tmp_path: Path) -> None:
    """dataset.min_grade is what counts as relevant; the metric follows it unless told."""
    beir = ["dataset=beir", f"dataset.path={tmp_path}", f"metric={metric}"]
    assert _compose(*beir).metric.min_grade == 1
    assert _compose(*beir, "dataset.min_grade=2").metric.min_grade == 2
    assert _compose(f"metric={metric}").metric.min_grade == 1  # a dataset without grades
    assert _compose(*beir, "dataset.min_grade=2", "metric.min_grade=3").metric.min_grade == 3
    cfg = _compose("dataset=trec_dl19", f"metric={metric}")
    assert cfg.metric.min_grade == cfg.dataset.min_grade == 2


def test_the_local_group_is_optional_and_git_ignored() -> None:
    assert (CONF / "local" / ".gitignore").read_text().split() == ["*.yaml"]
    _compose()  # composes without conf/local/default.yaml
