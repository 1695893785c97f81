"""``lance_fw.namespace.DirectoryNamespace`` against pylance's ``lance.namespace.DirectoryNamespace``:
the same calls give the same results and error classes, over local directories and S3, and tables
created by one library are listed, described and read by the other."""

from __future__ import annotations

import io

import lance
import lance.namespace as pyns
import lance_namespace as L
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.namespace as fwns
from lance_fw.errors import UnsupportedFeatureError
from lance_fw.table.namespace_dir import DirectoryTables

ROWS = 9000  # crosses the 4096-row boundaries twice


def _ipc(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    with pa.ipc.new_stream(buf, table.schema) as writer:
        writer.write_table(table)
    return buf.getvalue()


def _data(n: int = ROWS) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"v{i % 97}" for i in range(n)]})


def _both(root: str, **props: str) -> tuple[object, object]:
    return pyns.DirectoryNamespace(root=root, **props), fwns.DirectoryNamespace(root=root, **props)


def _outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # the class name is the result compared
        return ("error", type(exc).__name__)


def _fields(response: object, names: list[str]) -> dict[str, object]:
    return {n: getattr(response, n) for n in names}


def test_lifecycle_matches_pylance(tmp_path):
    """Each step on two roots, one per library: same responses, same error classes."""
    results = []
    for lib, root in (("py", tmp_path / "py"), ("fw", tmp_path / "fw")):
        root.mkdir()
        ns = (pyns if lib == "py" else fwns).DirectoryNamespace(root=str(root))
        results.append([_relocate(o, str(root)) for o in _lifecycle(ns)])
    assert results[0] == results[1]


def _lifecycle(ns: object) -> list[tuple[str, object]]:
    """Create, declare, list, describe, test and drop tables, with the failing variants of each."""
    steps = [
        lambda: ns.list_tables(L.ListTablesRequest(id=[])).tables,
        lambda: _fields(
            ns.create_table(L.CreateTableRequest(id=["a"]), _ipc(_data())), ["location", "version"]
        ),
        lambda: ns.create_table(L.CreateTableRequest(id=["a"]), _ipc(_data(3))),
        lambda: _fields(ns.declare_table(L.DeclareTableRequest(id=["b"])), ["location"]),
        lambda: ns.declare_table(L.DeclareTableRequest(id=["b"])),
        lambda: ns.list_tables(L.ListTablesRequest(id=[])).tables,
        lambda: ns.list_tables(L.ListTablesRequest(id=[], limit=1)).tables,
        lambda: ns.list_tables(L.ListTablesRequest(id=["nope"])).tables,
        lambda: ns.list_tables(L.ListTablesRequest()),
        lambda: _fields(
            ns.describe_table(L.DescribeTableRequest(id=["a"])),
            ["table", "namespace", "location", "table_uri", "storage_options"],
        ),
        lambda: ns.describe_table(L.DescribeTableRequest(id=["zz"])),
        lambda: ns.table_exists(L.TableExistsRequest(id=["a"])).context,
        lambda: ns.table_exists(L.TableExistsRequest(id=["zz"])),
        lambda: ns.list_namespaces(L.ListNamespacesRequest(id=[])).namespaces,
        lambda: ns.describe_namespace(L.DescribeNamespaceRequest(id=[])).properties,
        lambda: ns.namespace_exists(L.NamespaceExistsRequest(id=["zz"])),
        lambda: ns.drop_table(L.DropTableRequest(id=["zz"])),
        lambda: _fields(ns.drop_table(L.DropTableRequest(id=["b"])), ["id", "location"]),
        lambda: ns.list_tables(L.ListTablesRequest(id=[])).tables,
    ]
    return [_outcome(step) for step in steps]


def _relocate(outcome: tuple[str, object], root: str) -> str:
    """The outcome's repr with the root replaced, so the two roots compare equal."""
    return repr(outcome).replace(root, "ROOT")


def test_tables_cross_between_libraries(tmp_path):
    py, fw = _both(str(tmp_path))
    py.create_table(L.CreateTableRequest(id=["by_py"]), _ipc(_data()))
    fw.create_table(L.CreateTableRequest(id=["by_fw"]), _ipc(_data(5000)))
    py.declare_table(L.DeclareTableRequest(id=["declared"]))
    expected = ["by_fw", "by_py", "declared"]
    assert py.list_tables(L.ListTablesRequest(id=[])).tables == expected
    assert fw.list_tables(L.ListTablesRequest(id=[])).tables == expected
    # each library reads the other's table through its own namespace
    assert (
        lance_fw.dataset(fw.describe_table(L.DescribeTableRequest(id=["by_py"])).location).count_rows()
        == ROWS
    )
    assert lance.dataset(namespace_client=py, table_id=["by_fw"]).count_rows() == 5000
    # overwrite through lance_fw, read by pylance
    fw.create_table(L.CreateTableRequest(id=["by_py"], mode="overwrite"), _ipc(_data(10)))
    assert lance.dataset(namespace_client=py, table_id=["by_py"]).to_table() == _data(10)
    # a table pylance's __manifest tracks cannot be dropped without writing the manifest: refused
    with pytest.raises(UnsupportedFeatureError, match="__manifest"):
        fw.drop_table(L.DropTableRequest(id=["by_py"]))
    fw.drop_table(L.DropTableRequest(id=["by_fw"]))
    assert py.list_tables(L.ListTablesRequest(id=[])).tables == ["by_py", "declared"]


def test_child_namespaces_are_listed_and_their_writes_refused(tmp_path):
    py, fw = _both(str(tmp_path))
    py.create_namespace(L.CreateNamespaceRequest(id=["sub"]))
    assert fw.list_namespaces(L.ListNamespacesRequest(id=[])).namespaces == ["sub"]
    fw.namespace_exists(L.NamespaceExistsRequest(id=["sub"]))
    assert fw.describe_namespace(L.DescribeNamespaceRequest(id=["sub"])).properties is None
    for call in (
        lambda: fw.create_namespace(L.CreateNamespaceRequest(id=["x"])),
        lambda: fw.create_table(L.CreateTableRequest(id=["sub", "t"]), _ipc(_data(3))),
        lambda: fw.list_tables(L.ListTablesRequest(id=["sub"])),
    ):
        with pytest.raises(UnsupportedFeatureError):
            call()


def test_dataset_and_write_resolution(tmp_path):
    fw = fwns.DirectoryNamespace(root=str(tmp_path))
    uri, options = fwns.resolve_write_uri(fw, ["t"], "create")
    lance_fw.write_dataset(_data(), uri, storage_options=options)
    with pytest.raises(fwns.TableAlreadyExistsError):
        fwns.resolve_write_uri(fw, ["t"], "create")
    with pytest.raises(fwns.TableNotFoundError):
        fwns.resolve_write_uri(fw, ["u"], "append")
    uri, options = fwns.resolve_table_uri(fw, ["t"])
    assert lance_fw.dataset(uri, storage_options=options).count_rows() == ROWS
    assert (
        lance.dataset(
            namespace_client=pyns.DirectoryNamespace(root=str(tmp_path)), table_id=["t"]
        ).count_rows()
        == ROWS
    )
    with pytest.raises(UnsupportedFeatureError):
        fwns.resolve_table_uri(pyns.DirectoryNamespace(root=str(tmp_path)), ["t"])


def test_refusals_name_why():
    with pytest.raises(UnsupportedFeatureError, match="REST"):
        fwns.RestNamespace(uri="http://localhost:1")
    with pytest.raises(UnsupportedFeatureError, match="REST"):
        fwns.RestAdapter()
    ns = fwns.DirectoryNamespace(root="memory://x")
    with pytest.raises(UnsupportedFeatureError, match="count_table_rows"):
        ns.count_table_rows(L.CountTableRowsRequest(id=["t"]))
    with pytest.raises(lance_fw.errors.InvalidArgumentError):
        fwns.DirectoryNamespace()


def test_unsafe_names_are_refused(tmp_path):
    fw = fwns.DirectoryNamespace(root=str(tmp_path))
    with pytest.raises(lance_fw.errors.InvalidArgumentError):
        fw.create_table(L.CreateTableRequest(id=["../x"]), _ipc(_data(3)))
    assert DirectoryTables(str(tmp_path)).tables() == []


def test_s3_root_shared_with_pylance(s3_server):
    root = s3_server.new_bucket() + "/ns"
    props = {f"storage.{k}": v for k, v in s3_server.storage_options.items()}
    py, fw = _both(root, **props)
    fw.create_table(L.CreateTableRequest(id=["by_fw"]), _ipc(_data()))
    py.create_table(L.CreateTableRequest(id=["by_py"]), _ipc(_data(7)))
    assert fw.list_tables(L.ListTablesRequest(id=[])).tables == ["by_fw", "by_py"]
    assert py.list_tables(L.ListTablesRequest(id=[])).tables == ["by_fw", "by_py"]
    # pylance's namespace does not hand its storage.* options to lance.dataset: pass them
    location = py.describe_table(L.DescribeTableRequest(id=["by_fw"])).location
    assert lance.dataset(location, storage_options=s3_server.storage_options).count_rows() == ROWS
    fw.declare_table(L.DeclareTableRequest(id=["d"]))
    fw.drop_table(L.DropTableRequest(id=["d"]))
    fw.drop_table(L.DropTableRequest(id=["by_fw"]))
    assert py.list_tables(L.ListTablesRequest(id=[])).tables == ["by_py"]
    with pytest.raises(fwns.TableNotFoundError):
        fw.describe_table(L.DescribeTableRequest(id=["by_fw"]))


def test_dataset_and_write_dataset_take_a_namespace_as_pylance(tmp_path):
    """``write_dataset`` / ``dataset`` with ``namespace_client=`` and ``table_id=`` write and open
    the same table as pylance's, each library reading what the other wrote."""
    for mod, ns_mod, name in ((lance, pyns, "by_pylance"), (lance_fw, fwns, "by_lance_fw")):
        ns = ns_mod.DirectoryNamespace(root=str(tmp_path))
        mod.write_dataset(_data(), namespace_client=ns, table_id=[name])
        mod.write_dataset(_data(), namespace_client=ns, table_id=[name], mode="append")
    for name in ("by_pylance", "by_lance_fw"):
        ours = lance_fw.dataset(namespace_client=fwns.DirectoryNamespace(root=str(tmp_path)), table_id=[name])
        theirs = lance.dataset(namespace_client=pyns.DirectoryNamespace(root=str(tmp_path)), table_id=[name])
        assert ours.to_table().equals(theirs.to_table())
        assert ours.count_rows() == 2 * ROWS
    fw = fwns.DirectoryNamespace(root=str(tmp_path))
    with pytest.raises(fwns.TableAlreadyExistsError):
        lance_fw.write_dataset(_data(), namespace_client=fw, table_id=["by_lance_fw"])
    with pytest.raises(fwns.TableNotFoundError):
        lance_fw.dataset(namespace_client=fw, table_id=["missing"])
    with pytest.raises(lance_fw.errors.InvalidArgumentError):
        lance_fw.dataset(str(tmp_path / "x"), namespace_client=fw, table_id=["by_lance_fw"])
