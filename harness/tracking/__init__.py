"""Experiment tracking: MLflow, or nothing."""
