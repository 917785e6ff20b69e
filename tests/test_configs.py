"""Every option of every config group composes and instantiates."""

from pathlib import Path

import pytest
from conftest import CONF
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
NEEDS_PATH = {
    ("dataset", "jsonl"), ("dataset", "json"), ("dataset", "csv"), ("dataset", "beir"),
    ("dataset", "parquet"),
}


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
        obj = instantiate(OmegaConf.select(cfg, package_of(group, option)), _convert_="all")
    assert obj is not None
    if group == "metric":
        assert obj.name == option  # the option name is what outputs record
        obj.close()
    if group == "dataset" and (group, option) not in NEEDS_PATH:
        obj.check()  # the bundled sample, and the BEIR sets in ../shared/data


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
