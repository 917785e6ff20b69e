"""``python -m harness.compare``."""

from harness.cli.compare import main

if __name__ == "__main__":
    main()
