"""``lance_fw.progress`` against pylance's ``lance.progress``: the same tracker code sees the same
``begin``/``complete`` calls (fragment ids, rows, file fields) from ``write_fragments`` and
``LanceFragment.create``, ``FileSystemFragmentWriteProgress`` writes the same files, and
``IndexProgress`` computes the same fractions.

One difference on purpose (see ``lance_fw/progress.py``): pylance's ``write_fragments`` never
completes its last file; lance_fw does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import lance
import lance.progress
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.progress

LIBS = {lance: lance.progress, lance_fw: lance_fw.progress}
ROWS = 10_000


def _table() -> pa.Table:
    return pa.table({"id": pa.array(np.arange(ROWS), pa.int64()), "s": [f"s{i % 31}" for i in range(ROWS)]})


def _recorder(module: Any) -> Any:
    class Recorder(module.FragmentWriteProgress):
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def begin(self, fragment: Any, **kwargs: Any) -> None:
            files = [(list(f.fields), f.file_major_version, f.file_minor_version) for f in fragment.files]
            self.calls.append(("begin", fragment.id, fragment.physical_rows, files))

        def complete(self, fragment: Any, **kwargs: Any) -> None:
            files = [(list(f.fields), f.file_major_version, f.file_minor_version) for f in fragment.files]
            self.calls.append(("complete", fragment.id, fragment.physical_rows, files))

    return Recorder()


def test_write_fragments_reports_each_file(tmp_path: Path) -> None:
    calls = {}
    for lib, module in LIBS.items():
        recorder = _recorder(module)
        lib.fragment.write_fragments(
            _table(), str(tmp_path / lib.__name__), max_rows_per_file=3000, progress=recorder
        )
        calls[lib] = recorder.calls
    assert calls[lance] == calls[lance_fw][:-1]  # pylance leaves the last file uncompleted
    assert calls[lance_fw][-1] == ("complete", 0, 1000, [([0, 1], 2, 2)])
    assert [c[0] for c in calls[lance_fw]] == ["begin", "complete"] * 4


def test_create_reports_its_file(tmp_path: Path) -> None:
    calls = {}
    for lib, module in LIBS.items():
        recorder = _recorder(module)
        lib.LanceFragment.create(str(tmp_path / lib.__name__), _table(), fragment_id=4, progress=recorder)
        calls[lib] = recorder.calls
    assert calls[lance] == calls[lance_fw]
    assert calls[lance_fw] == [("begin", 4, None, [([], 2, 2)]), ("complete", 4, ROWS, [([0, 1], 2, 2)])]


def _fs_state(folder: Path) -> dict[str, Any]:
    out = {}
    for name in sorted(os.listdir(folder)):
        value = json.loads((folder / name).read_text())
        for f in value.get("files", []):
            f["path"] = "<path>"
        out[name] = value
    return out


@pytest.mark.parametrize("finish", [True, False], ids=["completed", "interrupted"])
def test_file_system_progress_writes_pylance_files(tmp_path: Path, finish: bool) -> None:
    states, texts = {}, {}
    for lib, module in LIBS.items():
        folder = tmp_path / f"{lib.__name__}-progress"

        class Tracker(module.FileSystemFragmentWriteProgress):  # type: ignore[name-defined]
            def complete(self, fragment: Any, **kwargs: Any) -> None:
                if finish:
                    super().complete(fragment, **kwargs)

        tracker = Tracker(str(folder), {"worker": "7"})
        lib.LanceFragment.create(str(tmp_path / lib.__name__), _table(), fragment_id=2, progress=tracker)
        states[lib] = _fs_state(folder)
        texts[lib] = (folder / "fragment_2.json").read_text().split('"path"')[0]
    assert states[lance] == states[lance_fw]
    assert texts[lance] == texts[lance_fw]  # same JSON text, key order included
    expected = ["fragment_2.json"] if finish else ["fragment_2.in_progress", "fragment_2.json"]
    assert sorted(states[lance_fw]) == expected
    if not finish:
        assert states[lance_fw]["fragment_2.in_progress"] == {"fragment_id": 2, "metadata": {"worker": "7"}}


def test_noop_progress_and_abstract_base(tmp_path: Path) -> None:
    for lib, module in LIBS.items():
        meta = lib.LanceFragment.create(
            str(tmp_path / lib.__name__), _table(), progress=module.NoopFragmentWriteProgress()
        )
        assert meta.physical_rows == ROWS
        with pytest.raises(TypeError):
            module.FragmentWriteProgress()


@pytest.mark.parametrize(("completed", "total"), [(None, 10), (3, None), (3, 0), (3, 12), (20, 12), (0, 5)])
def test_index_progress_fraction(completed: int | None, total: int | None) -> None:
    made = [m.IndexProgress("progress", "train", completed, total, "rows") for m in LIBS.values()]
    assert made[0].fraction == made[1].fraction
    assert (made[0].event, made[0].stage, made[0].unit) == (made[1].event, made[1].stage, made[1].unit)


def test_pending_fragment_json_round_trip(tmp_path: Path) -> None:
    """The JSON pylance hands ``_do_begin`` (rows and sizes null) reads back as a pending fragment,
    in lance_fw as in pylance, and survives pickling."""
    import pickle

    seen = {}
    for lib, module in LIBS.items():
        recorder = _recorder(module)
        lib.LanceFragment.create(str(tmp_path / lib.__name__), _table(), fragment_id=1, progress=recorder)
        text = (
            '{"id": 1, "files": [{"fields": [], "column_indices": [], "file_major_version": 2, '
            '"file_minor_version": 2, "file_size_bytes": null, "base_id": null, "path": "a.lance"}], '
            '"overlays": [], "physical_rows": null, "deletion_file": null, "row_id_meta": null, '
            '"created_at_version_meta": null, "last_updated_at_version_meta": null}'
        )
        recorder._do_begin(text)
        fragment = lib.fragment.FragmentMetadata.from_json(text)
        seen[lib] = (recorder.calls[-1], pickle.loads(pickle.dumps(fragment)).to_json())
    assert seen[lance] == seen[lance_fw]
