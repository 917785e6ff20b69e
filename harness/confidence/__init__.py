"""Human labels in, intervals that account for the judge out.

``labels`` reads a labels file (``run.human_labels``), ``match`` ties its rows to a run's
retrieved chunks, ``ppi`` turns judge scores on every sample and human scores on the
labelled ones into the ``confidence`` block (PPI++ through ``ppi-python``; ``bootstrap``
the interval below 50 labels), ``agreement`` compares the judge's chunk verdicts with the
human ones, ``plan`` works out how many labels give a half-width, and ``sheet`` draws the
samples to label from a finished run and writes the sheet a labeller fills in.

Nothing here imports ``ppi_py`` (numba, statsmodels) until an interval is computed.
"""
