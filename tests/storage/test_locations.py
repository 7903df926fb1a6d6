"""Listing a store's directories while other processes change them."""

from __future__ import annotations

from pathlib import Path

from laminar_kafka.storage.locations import children


def test_children_are_listed_by_name(tmp_path: Path) -> None:
    for name in ("b", "a", "c"):
        (tmp_path / name).write_text(name)
    assert [p.name for p in children(tmp_path)] == ["a", "b", "c"]


def test_a_missing_directory_has_no_children(tmp_path: Path) -> None:
    assert children(tmp_path / "gone") == []


def test_a_directory_that_is_no_directory_by_the_listing_has_no_children(tmp_path: Path) -> None:
    # On an object store a prefix stops being a directory when its last object is
    # deleted, possibly between the existence check and the listing; the listing's
    # NotADirectoryError is the same one a path that is a file raises.
    leaf = tmp_path / "task-3"
    leaf.write_text("not a directory")
    assert children(leaf) == []
