"""BEIR folders (``dataset=beir``, ``scifact``, ``trec_dl19``, ``dbpedia_entity``): the dataset
(``dataset``) and the reading of its files (``files``)."""

from harness.datasets.beir.dataset import BeirDataset

__all__ = ["BeirDataset"]
