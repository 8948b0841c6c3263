"""``python -m dsctl`` is the ``dsctl`` command."""

from dsctl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
