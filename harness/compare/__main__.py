"""``python -m harness.compare``."""

from harness.compare.cli import main

if __name__ == "__main__":
    main()
