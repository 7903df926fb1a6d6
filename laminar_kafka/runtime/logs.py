"""Logging setup for the driver and the worker tasks."""

from __future__ import annotations

import logging
import os
import sys


def configure_worker_logging() -> None:
    """Workers log warnings to stderr (shown by Spark); LAMINAR_LOG_LEVEL overrides."""
    level = os.environ.get("LAMINAR_LOG_LEVEL", "WARNING").upper()
    root = logging.getLogger("laminar_kafka")
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(asctime)s [worker %(process)d] %(levelname)s %(message)s")
        )
        root.addHandler(handler)
    root.setLevel(level)
