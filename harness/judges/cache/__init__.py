"""The verdict cache: every judgement is paid for once. ``lookup`` (the judge's side),
``sqlite`` (the file, the default), ``postgres`` and ``schema`` (a team's shared cache)."""
