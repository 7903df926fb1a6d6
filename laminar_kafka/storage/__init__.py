"""Durable bytes on a local disk or an object store: atomic writes, paths from URLs."""
