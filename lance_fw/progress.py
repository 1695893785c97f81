"""``lance_fw.progress``: pylance's ``lance.progress`` names (``from lance.progress import ...``).

Why: distributed writers (Ray, Daft) pass a ``FragmentWriteProgress`` to ``write_fragments`` /
``LanceFragment.create`` to learn which data files a worker was writing when it died, so they can
clean them up. lance_fw calls ``begin(fragment)`` when a data file is opened and
``complete(fragment)`` once it is finished, with ``FragmentMetadata`` of the same shape pylance
passes (at ``begin`` the row count and file size are unknown: ``None``).

One difference, on purpose: pylance 14's ``write_fragments`` never calls ``complete`` for the last
file it writes (a ``FileSystemFragmentWriteProgress`` then reports a finished file as in
progress); lance_fw completes every file it finished.
"""

from __future__ import annotations

import json
import posixpath
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lance_fw.api.distributed import FragmentMetadata


@dataclass(frozen=True)
class IndexProgress:
    """One progress event of an index build (pylance's ``IndexProgress``): ``event`` is
    ``"start"``, ``"progress"`` or ``"complete"`` of ``stage``; ``completed`` of ``total`` ``unit``s
    where known."""

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: int | None = None
    total: int | None = None
    unit: str = ""

    @property
    def fraction(self) -> float | None:
        """``completed / total`` capped at 1.0; None when either is unknown or ``total`` is 0."""
        if self.completed is None or not self.total:
            return None
        return min(self.completed / self.total, 1.0)


class FragmentWriteProgress(ABC):
    """What a fragment writer tells about each data file (pylance's abstract base class)."""

    def _do_begin(self, fragment_json: str, **kwargs: Any) -> None:
        """pylance's entry point taking the fragment as JSON text."""
        from lance_fw.api.distributed import FragmentMetadata

        return self.begin(FragmentMetadata.from_json(fragment_json), **kwargs)

    @abstractmethod
    def begin(self, fragment: FragmentMetadata, **kwargs: Any) -> None:
        """A data file of ``fragment`` is about to be written (its id may not be assigned yet)."""

    def _do_complete(self, fragment_json: str, **kwargs: Any) -> None:
        """pylance's entry point taking the fragment as JSON text."""
        from lance_fw.api.distributed import FragmentMetadata

        return self.complete(FragmentMetadata.from_json(fragment_json), **kwargs)

    @abstractmethod
    def complete(self, fragment: FragmentMetadata, **kwargs: Any) -> None:
        """``fragment``'s data file is completely written."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    """Tracks nothing (pylance's default)."""

    def begin(self, fragment: FragmentMetadata, **kwargs: Any) -> None:
        pass

    def complete(self, fragment: FragmentMetadata, **kwargs: Any) -> None:
        pass


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Records progress as files under ``base_uri`` (pylance's layout): at ``begin``,
    ``fragment_<id>.in_progress`` (``{"fragment_id": id, "metadata": metadata}``) and
    ``fragment_<id>.json`` (the fragment's ``to_json()``); ``complete`` removes the first, so the
    ``.in_progress`` files left after a crash name the fragments whose files may be partial."""

    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri: str, metadata: dict[str, str] | None = None) -> None:
        from pyarrow.fs import FileSystem

        self._fs, self._base_path = FileSystem.from_uri(base_uri)
        self._metadata = dict(metadata) if metadata else {}

    def _in_progress_path(self, fragment: FragmentMetadata) -> str:
        return posixpath.join(self._base_path, f"fragment_{fragment.id}{self.PROGRESS_EXT}")

    def _fragment_file(self, fragment: FragmentMetadata) -> str:
        return posixpath.join(self._base_path, f"fragment_{fragment.id}.json")

    def _write(self, path: str, value: object) -> None:
        with self._fs.open_output_stream(path) as out:
            out.write(json.dumps(value).encode("utf-8"))

    def begin(self, fragment: FragmentMetadata, **kwargs: Any) -> None:
        self._fs.create_dir(self._base_path, recursive=True)
        self._write(
            self._in_progress_path(fragment), {"fragment_id": fragment.id, "metadata": self._metadata}
        )
        self._write(self._fragment_file(fragment), fragment.to_json())

    def complete(self, fragment: FragmentMetadata, **kwargs: Any) -> None:
        self._fs.delete_file(self._in_progress_path(fragment))


__all__ = [
    "FileSystemFragmentWriteProgress",
    "FragmentWriteProgress",
    "IndexProgress",
    "NoopFragmentWriteProgress",
]
