"""``python -m harness.report RUN_DIR|SWEEP_DIR|RUN_ID [tracking_uri=URI] [out=FILE]``:
write (again) the ``report.html`` of a run or a sweep."""

from __future__ import annotations

import sys

from harness.cli.report import main

if __name__ == "__main__":
    sys.exit(main())
