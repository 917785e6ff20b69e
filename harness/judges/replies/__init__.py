"""What comes back from a judge: ``read`` (the raw reply), ``parse`` (verdicts),
``schemas`` (the JSON schemas asked for), ``failures`` (errors as one line)."""
