"""lance_fw on S3: a real SeaweedFS on loopback (``s3_server`` fixture, s3_server.py), pylance the oracle.

Every dataset lives in a fresh bucket; pylance gets the very same ``storage_options`` dict, so the
tests also pin which of pylance's option keys lance_fw understands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import lance
import pyarrow as pa
import pytest

import lance_fw
from conftest import assert_tables_equal
from lance_fw.errors import CommitConflictError, InvalidArgumentError, StorageError, UnsupportedFeatureError
from lance_fw.io.storage import resolve_storage

#: Rows per test table: more than one 4096-value chunk and several 1024-value blocks.
ROWS = 5000
#: Small files, so a table spans several fragments (and range reads several objects).
ROWS_PER_FILE = 2000
#: Subprocesses get this long (2-core CI machines, a cold interpreter importing pyarrow + s3fs).
SUBPROCESS_TIMEOUT_S = 300


def table(start: int, n: int = ROWS) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "name": pa.array([f"row-{i}" for i in range(start, start + n)]),
                     "score": pa.array([float(i % 97) / 7 for i in range(start, start + n)])})


def sorted_by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def assert_same_as_pylance(uri: str, options: dict) -> None:
    ours = lance_fw.dataset(uri, storage_options=options)
    theirs = lance.dataset(uri, storage_options=options)
    assert ours.version == theirs.version
    assert_tables_equal(theirs.to_table(), ours.to_table())


def run_python(code: str, env: dict | None = None) -> str:
    """Run ``code`` in a fresh interpreter (another process, as another writer would be)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_a_server_that_cannot_start_is_reported_with_its_log(monkeypatch, tmp_path):
    """The fixture fails (never skips) with the reason when SeaweedFS does not come up."""
    import s3_server as module

    fake = tmp_path / "weed"
    fake.write_text("#!/bin/sh\necho 'cannot bind: address in use'\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(module, "weed_binary", lambda: fake)
    with pytest.raises(RuntimeError, match="(?s)exited with 3.*cannot bind"):
        with module.running_s3_server(tmp_path / "srv"):
            pass


# --- configuration --------------------------------------------------------------------------

def test_pylance_storage_options_write_and_read(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    ds = lance_fw.write_dataset(table(0), uri, storage_options=opts, max_rows_per_file=ROWS_PER_FILE)
    assert ds.version == 1
    assert len(ds.get_fragments()) == 3
    assert_same_as_pylance(uri, opts)


#: Spellings of the same configuration that pylance (object_store) accepts: lance_fw must take each.
ALIASES = {
    "short": {"aws_access_key_id": "access_key_id", "aws_secret_access_key": "secret_access_key",
              "aws_endpoint": "endpoint", "aws_region": "region"},
    "url": {"aws_endpoint": "aws_endpoint_url", "aws_region": "aws_default_region", "allow_http": "aws_allow_http"},
    "short_url": {"aws_endpoint": "endpoint_url", "aws_region": "default_region"},
}


@pytest.mark.parametrize("spelling", sorted(ALIASES))
def test_option_aliases_pylance_accepts(s3_server, spelling):
    uri = s3_server.new_bucket() + "/ds"
    opts = {ALIASES[spelling].get(k, k): v for k, v in s3_server.storage_options.items()}
    lance.write_dataset(table(0, 100), uri, storage_options=opts)
    lance_fw.write_dataset(table(100, 100), uri, mode="append", storage_options=opts)
    assert_same_as_pylance(uri, opts)


@pytest.mark.parametrize("endpoint_variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"])
def test_aws_environment_alone_configures_s3(s3_server, monkeypatch, endpoint_variable):
    uri = s3_server.new_bucket() + "/ds"
    lance.write_dataset(table(0, 100), uri, storage_options=s3_server.storage_options)
    for name, value in s3_server.env.items():
        if name.startswith("AWS_ENDPOINT") and name != endpoint_variable:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    ds = lance_fw.dataset(uri)
    assert_tables_equal(table(0, 100), ds.to_table())
    lance_fw.write_dataset(table(100, 50), uri, mode="append")
    assert lance.dataset(uri, storage_options=s3_server.storage_options).count_rows() == 150


def test_options_override_the_environment(s3_server, monkeypatch):
    uri = s3_server.new_bucket() + "/ds"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    lance_fw.write_dataset(table(0, 10), uri, storage_options=s3_server.storage_options)
    assert lance_fw.dataset(uri, storage_options=s3_server.storage_options).count_rows() == 10


def test_unknown_storage_option_raises(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    bad = {**s3_server.storage_options, "aws_endpoint_urll": s3_server.endpoint}
    with pytest.raises(InvalidArgumentError, match="aws_endpoint_urll"):
        lance_fw.write_dataset(table(0, 10), uri, storage_options=bad)


def test_pylance_option_lance_fw_cannot_honour_raises(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    opts = {**s3_server.storage_options, "aws_server_side_encryption": "aws:kms"}
    with pytest.raises(UnsupportedFeatureError, match="aws_server_side_encryption"):
        lance_fw.write_dataset(table(0, 10), uri, storage_options=opts)


def test_bad_boolean_option_raises(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    with pytest.raises(InvalidArgumentError, match="allow_http"):
        lance_fw.dataset(uri, storage_options={**s3_server.storage_options, "allow_http": "sure"})


def test_http_endpoint_needs_allow_http_as_in_pylance(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    lance.write_dataset(table(0, 10), uri, storage_options=s3_server.storage_options)
    opts = {k: v for k, v in s3_server.storage_options.items() if k != "allow_http"}
    with pytest.raises(Exception):
        lance.dataset(uri, storage_options=opts).to_table()
    with pytest.raises(InvalidArgumentError, match="allow_http"):
        lance_fw.dataset(uri, storage_options=opts)


def test_wrong_secret_is_a_storage_error_as_pylance_fails(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    lance.write_dataset(table(0, 10), uri, storage_options=s3_server.storage_options)
    bad = {**s3_server.storage_options, "aws_secret_access_key": "wrong"}
    with pytest.raises((OSError, ValueError)):  # pylance: ValueError "LanceError(IO) ... 403 Forbidden"
        lance.dataset(uri, storage_options=bad).to_table()
    with pytest.raises(StorageError, match="signature"):
        lance_fw.dataset(uri, storage_options=bad)


def test_no_credentials_is_a_storage_error(s3_server, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    opts = {"aws_endpoint": s3_server.endpoint, "allow_http": "true"}
    with pytest.raises(StorageError, match="credentials"):  # was botocore's NoCredentialsError
        lance_fw.dataset(s3_server.new_bucket() + "/ds", storage_options=opts)


def test_write_to_a_missing_bucket_is_a_storage_error(s3_server):
    uri = s3_server.new_bucket() + "-none/ds"
    with pytest.raises((OSError, ValueError)):
        lance.write_dataset(table(0, 10), uri, storage_options=s3_server.storage_options)
    with pytest.raises(StorageError, match="NoSuchBucket|does not exist"):
        lance_fw.write_dataset(table(0, 10), uri, storage_options=s3_server.storage_options)


def test_missing_s3fs_names_the_extra(s3_server):
    out = run_python(f"""
        import sys
        sys.modules["s3fs"] = None  # as if lance_fw[s3] were not installed
        import lance_fw
        from lance_fw.errors import StorageError
        try:
            lance_fw.dataset("{s3_server.new_bucket()}/ds", storage_options={s3_server.storage_options!r})
        except StorageError as exc:
            print("raised:", exc)
    """)
    assert "raised:" in out and "pip install lance_fw[s3]" in out


def test_options_translate_to_s3fs_arguments():
    from lance_fw_plugins.s3_options import s3fs_kwargs

    kwargs = s3fs_kwargs({"access_key_id": "k", "aws_secret_access_key": "s", "token": "t", "region": "eu-west-1",
                          "endpoint_url": "https://minio.example:9000/", "connect_timeout": "500ms",
                          "timeout": "2min", "aws_skip_signature": "false", "request_payer": "yes"}, environ={})
    assert kwargs == {"use_listings_cache": False, "key": "k", "secret": "s", "token": "t",
                      "endpoint_url": "https://minio.example:9000", "requester_pays": True,
                      "client_kwargs": {"region_name": "eu-west-1"},
                      "config_kwargs": {"s3": {"addressing_style": "path"}, "max_pool_connections": 48,
                                        "connect_timeout": 0.5, "read_timeout": 120.0}}
    env = {"AWS_ACCESS_KEY_ID": "ek", "AWS_SECRET_ACCESS_KEY": "es", "AWS_DEFAULT_REGION": "ap-south-1",
           "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}
    kwargs = s3fs_kwargs({"aws_access_key_id": "ok"}, environ=env)  # an option wins over the environment
    assert (kwargs["key"], kwargs["secret"]) == ("ok", "es")
    assert kwargs["client_kwargs"]["region_name"] == "ap-south-1"
    assert kwargs["config_kwargs"]["s3"] == {"addressing_style": "virtual"}
    assert s3fs_kwargs({}, environ={})["client_kwargs"]["region_name"] == "us-east-1"  # object_store's default


@pytest.mark.parametrize("options, error, match", [
    ({"aws_region": "a", "region": "b"}, InvalidArgumentError, "same setting"),
    ({"timeout": "30"}, InvalidArgumentError, "duration"),
    ({"aws_endpoint": "minio:9000"}, InvalidArgumentError, "http"),
    ({"aws_endpoint": "http://h", "allow_http": "true", "aws_virtual_hosted_style_request": "true"},
     UnsupportedFeatureError, "virtual_hosted"),
    ({"aws_bucket": "b"}, UnsupportedFeatureError, "URI"),
])
def test_options_that_cannot_be_honoured_raise(options, error, match):
    from lance_fw_plugins.s3_options import s3fs_kwargs

    with pytest.raises(error, match=match):
        s3fs_kwargs(options, environ={})


# --- storage behaviour ----------------------------------------------------------------------

def test_put_if_absent_is_enforced_by_the_server(s3_server):
    root = s3_server.new_bucket()
    storage = resolve_storage(root, s3_server.storage_options)
    assert storage.atomic_put_if_absent is True
    storage.put_if_absent(root + "/_versions/1.manifest", b"first")
    with pytest.raises(CommitConflictError):
        storage.put_if_absent(root + "/_versions/1.manifest", b"second")
    assert storage.read_bytes(root + "/_versions/1.manifest") == b"first"
    # the same bytes again: a retried PUT whose first answer was lost created it; not a conflict
    storage.put_if_absent(root + "/_versions/1.manifest", b"first")


def test_range_reads_match_whole_object(s3_server):
    root = s3_server.new_bucket()
    storage = resolve_storage(root, s3_server.storage_options)
    blob = bytes(range(256)) * 2048  # 512 KiB
    storage.write_bytes(root + "/blob", blob)
    ranges = [(0, 10), (5, 100), (300_000, 4096), (131_000, 200_000), (len(blob) - 1, 1), (70_000, 0)]
    with storage.open_reader(root + "/blob") as reader:
        assert reader.size() == len(blob)
        assert [bytes(b) for b in reader.read_ranges(ranges)] == [blob[o:o + n] for o, n in ranges]
        assert reader.read(1000, 24) == blob[1000:1024]
        with pytest.raises(lance_fw.errors.CorruptFileError, match="truncated"):  # never short views
            reader.read_ranges([(0, 10), (len(blob) - 5, 10), (200_000, 10)])


def test_reader_never_mixes_a_replaced_object(s3_server):
    root = s3_server.new_bucket()
    storage = resolve_storage(root, s3_server.storage_options)
    storage.write_bytes(root + "/f", b"a" * 1000)
    with storage.open_reader(root + "/f") as reader:
        assert reader.read(0, 10) == b"a" * 10
        storage.write_bytes(root + "/f", b"b" * 1000)
        with pytest.raises(StorageError, match="replaced after it was opened"):
            reader.read(500, 10)  # was b"bbbbbbbbbb": the new object's bytes at the old one's offsets
        with pytest.raises(StorageError, match="replaced after it was opened"):
            reader.read_ranges([(0, 10), (900, 10)])
    with storage.open_reader(root + "/f") as reader:
        assert reader.read(500, 10) == b"b" * 10


def test_aborted_output_publishes_nothing(s3_server):
    root = s3_server.new_bucket()
    storage = resolve_storage(root, s3_server.storage_options)
    with pytest.raises(RuntimeError):
        with storage.open_output(root + "/data/x.lance") as out:
            out.write(b"partial")
            raise RuntimeError("writer failed")
    assert not storage.exists(root + "/data/x.lance")


def test_read_bytes_of_whole_objects(s3_server):
    root = s3_server.new_bucket()
    storage = resolve_storage(root, s3_server.storage_options)
    storage.write_bytes(root + "/a", b"manifest bytes")
    storage.write_bytes(root + "/empty", b"")
    assert storage.read_bytes(root + "/a") == b"manifest bytes"
    assert storage.read_bytes(root + "/empty") == b""
    with pytest.raises(lance_fw.errors.DatasetNotFoundError):
        storage.read_bytes(root + "/missing")


def test_missing_dataset_is_dataset_not_found(s3_server):
    with pytest.raises(lance_fw.errors.DatasetNotFoundError):
        lance_fw.dataset(s3_server.new_bucket() + "/nothing", storage_options=s3_server.storage_options)


# --- table operations, compared with pylance on the same bucket ------------------------------

def test_table_operations_match_pylance(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    lance_fw.write_dataset(table(0), uri, storage_options=opts, max_rows_per_file=ROWS_PER_FILE)
    lance_fw.write_dataset(table(ROWS, 1500), uri, mode="append", storage_options=opts)
    assert_same_as_pylance(uri, opts)

    ds = lance_fw.dataset(uri, storage_options=opts)
    ds.delete("id % 10 = 3")
    assert_same_as_pylance(uri, opts)
    ds = lance_fw.dataset(uri, storage_options=opts)
    ds.update({"score": "score + 1"}, where="id < 100")
    assert_same_as_pylance(uri, opts)

    ds = lance_fw.dataset(uri, storage_options=opts)
    source = table(ROWS + 1000, 1000)  # half updates existing rows, half inserts
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)
    assert_same_as_pylance(uri, opts)

    ds = lance_fw.dataset(uri, storage_options=opts)
    before = sorted_by_id(ds.to_table())
    ds.optimize.compact_files(target_rows_per_fragment=100_000)
    ds = lance_fw.dataset(uri, storage_options=opts)
    assert len(ds.get_fragments()) == 1
    assert_tables_equal(before, sorted_by_id(ds.to_table()))
    assert_same_as_pylance(uri, opts)

    ds.tags.create("compacted", ds.version)
    theirs = lance.dataset(uri, storage_options=opts)
    assert theirs.tags.list()["compacted"]["version"] == ds.version
    theirs.tags.create("first", 1)
    assert lance_fw.dataset(uri, storage_options=opts).tags.get_version("first") == 1

    from datetime import timedelta
    latest = ds.version
    ds.tags.delete("first")
    stats = lance_fw.dataset(uri, storage_options=opts).cleanup_old_versions(older_than=timedelta(0))
    assert stats.old_versions > 0
    assert [v["version"] for v in lance.dataset(uri, storage_options=opts).versions()] == [latest]
    assert_same_as_pylance(uri, opts)


def test_a_limit_over_s3_takes_its_rows_side_by_side(s3_server, monkeypatch):
    """A limit's few rows over S3 are taken (``FragmentReader.read_range`` alone), each column on
    the take-fetches pool, and equal pylance's, with deleted rows."""
    from lance_fw.table import fragment as fragment_module

    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    lance.write_dataset(table(0, 40_000), uri, storage_options=opts, data_storage_version="2.2")
    lance.dataset(uri, storage_options=opts).delete("id % 9 = 2")
    threads: list[str] = []
    original = fragment_module.FragmentReader.take_physical

    def recording(self, fields, offsets):
        threads.append(threading.current_thread().name)
        return original(self, fields, offsets)

    monkeypatch.setattr(fragment_module.FragmentReader, "take_physical", recording)
    theirs, ours = lance.dataset(uri, storage_options=opts), lance_fw.dataset(uri, storage_options=opts)
    for options in ({"limit": 10}, {"offset": 30_000, "limit": 25}, {"columns": ["name"], "limit": 5}):
        assert_tables_equal(theirs.to_table(**options), ours.to_table(**options))
    assert threads and all(fragment_module.TAKE_IO_POOL in name for name in threads[:3])


def test_pylance_writes_lance_fw_appends_pylance_reads(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    lance.write_dataset(table(0), uri, storage_options=opts, max_rows_per_file=ROWS_PER_FILE)
    assert_tables_equal(table(0), lance_fw.dataset(uri, storage_options=opts).to_table())
    lance_fw.write_dataset(table(ROWS, 100), uri, mode="append", storage_options=opts)
    lance.write_dataset(table(ROWS + 100, 100), uri, mode="append", storage_options=opts)
    ours = lance_fw.dataset(uri, storage_options=opts)
    assert ours.version == 3
    assert_tables_equal(table(0, ROWS + 200), ours.to_table())
    assert_same_as_pylance(uri, opts)
    theirs = lance.dataset(uri, storage_options=opts)
    assert theirs.take([0, ROWS + 150]).to_pylist() == ours.take([0, ROWS + 150]).to_pylist()


# --- freshness: another process's commit is seen without re-importing -------------------------

def test_commits_of_another_process_are_seen(s3_server):
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    ds = lance_fw.write_dataset(table(0, 100), uri, storage_options=opts)
    assert lance_fw.dataset(uri, storage_options=opts).version == 1  # lists _versions/ once here
    run_python(f"""
        import pyarrow as pa, lance_fw
        lance_fw.write_dataset(pa.table({{"id": pa.array([1000], pa.int64()), "name": ["x"], "score": [0.5]}}),
                               "{uri}", mode="append", storage_options={opts!r})
    """)
    assert lance_fw.dataset(uri, storage_options=opts).version == 2
    assert ds.latest_version == 2
    assert ds.checkout_version(2).count_rows() == 101
    ds.checkout_latest()
    assert ds.version == 2 and ds.count_rows() == 101


# --- concurrency: several processes commit to one dataset ------------------------------------

#: Writer processes and operations each, in the concurrency test.
WRITERS, OPS_PER_WRITER = 3, 8
#: Rows per appended batch; a writer's i-th batch holds ids writer * 10_000 + i * BATCH ...
BATCH = 10
#: Operations (by index) at which a writer deletes the even ids of its own k-th batch instead of appending.
DELETE_AT = (3, 6)

_WORKER = """
import json, sys, time
import pyarrow as pa
import importlib

uri, opts, writer, start_at = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
engine = importlib.import_module(sys.argv[5])  # lance_fw, or pylance ("lance") as another writer
time.sleep(max(0.0, start_at - time.time()))  # all writers start together
for i in range({ops}):
    try:
        if i in {delete_at}:
            lo = writer * 10_000 + {delete_at}.index(i) * {batch}  # an earlier batch of its own
            what = "id >= %d and id < %d and id %% 2 = 0" % (lo, lo + {batch})
            ds = engine.dataset(uri, storage_options=opts)
            ds.delete(what)
            print(json.dumps({{"op": "delete", "lo": lo, "version": ds.version}}), flush=True)
        else:
            ids = list(range(writer * 10_000 + i * {batch}, writer * 10_000 + (i + 1) * {batch}))
            t = pa.table({{"id": pa.array(ids, pa.int64()), "name": [str(x) for x in ids],
                          "score": [float(x) for x in ids]}})
            ds = engine.write_dataset(t, uri, mode="append", storage_options=opts)
            print(json.dumps({{"op": "append", "ids": ids, "version": ds.version}}), flush=True)
    except Exception as exc:  # the test tells a typed conflict from anything else
        print(json.dumps({{"op": "failed", "error": type(exc).__name__, "detail": str(exc)}}), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("engines", [("lance_fw",) * WRITERS, ("lance_fw",) * (WRITERS - 1) + ("lance",)],
                         ids=["lance_fw", "with_pylance"])
def test_concurrent_writers_lose_no_reported_commit(s3_server, engines):
    """Every commit a writer reports is in the dataset exactly once; pylance writing alongside
    (it commits by conditional PUT too, and rebases on lance_fw's transactions) changes nothing."""
    uri = s3_server.new_bucket() + "/ds"
    opts = s3_server.storage_options
    lance_fw.write_dataset(table(-BATCH, BATCH), uri, storage_options=opts)  # version 1, ids < 0
    script = _WORKER.format(ops=OPS_PER_WRITER, delete_at=DELETE_AT, batch=BATCH)
    start_at = time.time() + 8  # after every interpreter has imported lance_fw
    procs = [subprocess.Popen([sys.executable, "-c", script, uri, json.dumps(opts), str(w), str(start_at), engine],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w, engine in enumerate(engines)]
    reports = []
    for p, engine in zip(procs, engines):
        out, err = p.communicate(timeout=SUBPROCESS_TIMEOUT_S)
        assert p.returncode == 0, err
        reports += [{**json.loads(line), "engine": engine} for line in out.splitlines()]
    failed = [r for r in reports if r["op"] == "failed"]
    assert all(r["error"] == "CommitConflictError" for r in failed if r["engine"] == "lance_fw"), failed
    done = [r for r in reports if r["op"] != "failed"]

    final = lance_fw.dataset(uri, storage_options=opts)
    theirs = lance.dataset(uri, storage_options=opts)
    assert final.version == theirs.version == 1 + len(done)  # one version per reported commit
    assert [v["version"] for v in theirs.versions()] == list(range(1, final.version + 1))

    deleted = {i for r in done if r["op"] == "delete" for i in range(r["lo"], r["lo"] + BATCH, 2)}
    appended = [i for r in done if r["op"] == "append" for i in r["ids"]]
    expected = sorted((set(range(-BATCH, 0)) | set(appended)) - deleted)
    ids = final.to_table(columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == expected  # every reported row exactly once, every reported delete applied
    assert sorted(theirs.to_table(columns=["id"]).column("id").to_pylist()) == expected

    for r in done:  # each reported version holds what it reported, and pylance reads every version
        at = set(lance.dataset(uri, version=r["version"], storage_options=opts)
                 .to_table(columns=["id"]).column("id").to_pylist())
        if r["op"] == "append":
            assert set(r["ids"]) <= at
        else:
            assert not at & set(range(r["lo"], r["lo"] + BATCH, 2))
    print(f"\n{len(done)} commits reported, {len(failed)} conflicts reported, all present")
