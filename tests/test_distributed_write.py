"""pylance's distributed write: workers write fragments, the driver commits once, in both libraries
and across them (fragment JSON from pylance workers committed by lance_fw and the other way)."""

from __future__ import annotations

import json
import pickle

import lance
import lance.fragment
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.fragment
from lance_fw.errors import DatasetNotFoundError
from tests.conftest import assert_tables_equal

PARTS = [pa.table({"id": pa.array(range(i * 5, i * 5 + 5), pa.int64()), "s": [f"r{i}"] * 5}) for i in range(3)]
SCHEMA = PARTS[0].schema


def _worker(module, uri, part):
    """What a Ray / Spark task does: write, and ship the metadata back as JSON text."""
    return [json.dumps(f.to_json()) for f in module.fragment.write_fragments(part, uri, max_rows_per_file=3)]


@pytest.mark.parametrize("workers, driver", [(lance_fw, lance_fw), (lance, lance_fw), (lance_fw, lance)],
                         ids=["lance_fw", "pylance workers, lance_fw driver", "lance_fw workers, pylance driver"])
def test_write_fragments_then_commit(tmp_path, workers, driver):
    uri = str(tmp_path / "ds")
    shipped = [j for part in PARTS[:2] for j in _worker(workers, uri, part)]
    fragments = [driver.fragment.FragmentMetadata.from_json(j) for j in shipped]
    ds = driver.LanceDataset.commit(uri, driver.LanceOperation.Overwrite(SCHEMA, fragments))
    assert ds.version == 1
    more = [driver.fragment.FragmentMetadata.from_json(j) for j in _worker(workers, uri, PARTS[2])]
    ds = driver.LanceDataset.commit(uri, driver.LanceOperation.Append(more), read_version=1)
    assert ds.version == 2 and len(lance.dataset(uri).get_fragments()) == 6
    assert_tables_equal(pa.concat_tables(PARTS), lance.dataset(uri).to_table().sort_by("id"))
    assert_tables_equal(pa.concat_tables(PARTS), lance_fw.dataset(uri).to_table().sort_by("id"))


def test_metadata_json_and_pickle_match_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.concat_tables(PARTS), uri)
    lance.dataset(uri).delete("id < 2")
    theirs = lance.dataset(uri).get_fragments()[0].metadata.to_json()
    ours = lance_fw.fragment.FragmentMetadata.from_json(json.dumps(theirs))
    assert ours.to_json() == theirs
    assert pickle.loads(pickle.dumps(ours)).to_json() == theirs


def test_append_needs_a_dataset(tmp_path):
    uri = str(tmp_path / "none")
    fragments = lance_fw.fragment.write_fragments(PARTS[0], uri, mode="create")
    with pytest.raises(DatasetNotFoundError, match="Overwrite"):
        lance_fw.LanceDataset.commit(uri, lance_fw.LanceOperation.Append(fragments))
