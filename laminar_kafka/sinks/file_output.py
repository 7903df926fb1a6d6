"""How a file sink writes: the file format and the fields that name its directories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FileFormat = Literal["parquet", "jsonl"]
EXTENSIONS: dict[str, str] = {"parquet": "parquet", "jsonl": "jsonl"}


@dataclass(frozen=True)
class FileOutput:
    format: FileFormat = "parquet"
    partition_by: tuple[str, ...] = ()

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.format]
