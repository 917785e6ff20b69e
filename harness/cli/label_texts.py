"""Whole chunk texts for a labelling sheet whose run cut them (``run.row_text_chars``, 300
by default): each cut text is looked up by its document id in the corpus of the run's
dataset, as the run's ``config.yaml`` names it, and replaced when the corpus text starts
as the cut one does. Best effort: a run whose dataset has no corpus, or one that cannot be
read here (moved, another machine), keeps its cut texts, and ``harness label`` says so.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from harness.confidence.match import same_text
from harness.confidence.sheet import Sheet


def corpus_texts(run_dir: Path, wanted: Collection[str]) -> dict[str, str] | None:
    """``{document id: text}`` of the ``wanted`` documents in the corpus of the run's
    dataset; None when the run names no corpus that can be read here."""
    from omegaconf import DictConfig, OmegaConf

    from harness.config.build import instantiate

    try:
        cfg = OmegaConf.load(run_dir / "config.yaml")
        if not isinstance(cfg, DictConfig):
            return None
        cfg.trusted_targets = []  # harness's own datasets only: a run folder is data, not code
        corpus = instantiate(cfg, "dataset").corpus()
    except Exception:  # whatever keeps it from being read here: the cut texts stay, said
        return None
    if corpus is None:
        return None
    return {str(d.id): str(d.content) for d in corpus.documents if str(d.id) in wanted}


def fill_cut_texts(sheet: Sheet, run_dir: Path) -> int:
    """Replace the drawn sheet's cut texts with whole ones from the run's corpus, before it
    is written (``draw.json``'s ``texts_cut`` and ``texts_from_corpus`` too); how many were
    replaced."""
    lines = sheet.lines
    cut = {str(x["context_id"]) for x in lines if x["text_cut"] and x["context_id"] is not None}
    texts = corpus_texts(run_dir, cut) if cut else None
    if not texts:
        return 0
    filled = 0
    for line in lines:
        whole = texts.get(str(line["context_id"])) if line["text_cut"] else None
        if whole is not None and isinstance(line["context"], str) and same_text(
                line["context"], whole):
            line["context"], line["text_cut"] = whole, 0
            filled += 1
    if filled:
        sheet.record["texts_cut"] = sum(int(line["text_cut"]) for line in lines)
        sheet.record["texts_from_corpus"] = filled
    return filled
