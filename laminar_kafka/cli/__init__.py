"""The `laminar-kafka` command line: one module per command group, wired in `main.py`."""

__all__: list[str] = []
