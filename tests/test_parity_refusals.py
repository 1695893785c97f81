"""Every public member of pylance's LanceDataset and LanceFragment exists on lance_fw's: a pylance
user reaching a feature lance_fw lacks gets ``UnsupportedFeatureError`` naming it, never an
``AttributeError``; where pylance itself raises ``NotImplementedError`` (pyarrow Dataset methods it
leaves unimplemented) both libraries raise it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance.fragment import LanceFragment as PylanceFragment

import lance_fw
from lance_fw._util.refusals import NotImplementedInPylanceError, Refused, refused_names
from lance_fw.errors import UnsupportedFeatureError

#: pyarrow bases whose members pylance inherits without meaning them as its API
_FOREIGN = ("builtins", "pyarrow")


def _public(cls: type) -> list[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in _FOREIGN:
            names.update(n for n in vars(klass) if not n.startswith("_"))
    return sorted(names)


PAIRS = [(lance.LanceDataset, lance_fw.LanceDataset), (PylanceFragment, lance_fw.LanceFragment)]


@pytest.mark.parametrize(("theirs", "ours"), PAIRS, ids=["LanceDataset", "LanceFragment"])
def test_every_pylance_member_exists(theirs: type, ours: type) -> None:
    missing = []
    for name in _public(theirs):
        try:
            getattr(ours, name)
        except AttributeError:
            if name not in ("uri", "metadata"):  # instance attributes, checked below
                missing.append(name)
    assert missing == []


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, Any]:
    table = pa.table({"id": pa.array(range(5000), pa.int64())})
    out = {}
    for lib in (lance, lance_fw):
        out[lib] = lib.write_dataset(
            table, str(tmp_path_factory.mktemp(lib.__name__) / "d"), max_rows_per_file=4100
        )
    return out


def _refused(cls: type) -> list[str]:
    return sorted(refused_names(cls))


@pytest.mark.parametrize("name", _refused(lance_fw.LanceDataset))
def test_refused_dataset_member_raises_unsupported(datasets: dict[Any, Any], name: str) -> None:
    ds = datasets[lance_fw]
    _assert_refused(lambda: getattr(ds, name)(), name, vars_of(lance_fw.LanceDataset)[name])
    assert ds.count_rows() == 5000  # nothing changed


@pytest.mark.parametrize("name", _refused(lance_fw.LanceFragment))
def test_refused_fragment_member_raises_unsupported(datasets: dict[Any, Any], name: str) -> None:
    fragment = datasets[lance_fw].get_fragment(0)
    _assert_refused(lambda: getattr(fragment, name)("x"), name, vars_of(lance_fw.LanceFragment)[name])


def vars_of(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        out.update(vars(klass))
    return out


def _assert_refused(call: Any, name: str, stub: Refused) -> None:
    with pytest.raises(UnsupportedFeatureError, match=name) as raised:
        call()
    assert stub.why in str(raised.value)


def test_static_refusals_raise_through_the_class(tmp_path: Path) -> None:
    """pylance's static methods (``LanceDataset.drop``) are refused when called on the class too."""
    with pytest.raises(UnsupportedFeatureError, match="drop"):
        lance_fw.LanceDataset.drop(str(tmp_path))


@pytest.mark.parametrize(
    ("target", "call"),
    [
        ("dataset", lambda ds: ds.join(ds, "id")),
        ("dataset", lambda ds: ds.replace_schema(ds.schema)),
        ("dataset", lambda ds: ds.partition_expression),
        ("fragment", lambda ds: ds.get_fragment(0).physical_schema),
        ("fragment", lambda ds: ds.get_fragment(0).partition_expression),
    ],
    ids=[
        "join",
        "replace_schema",
        "partition_expression",
        "fragment.physical_schema",
        "fragment.partition_expression",
    ],
)
def test_not_implemented_in_pylance_either(datasets: dict[Any, Any], target: str, call: Any) -> None:
    with pytest.raises(NotImplementedError):
        call(datasets[lance])
    with pytest.raises(NotImplementedInPylanceError):
        call(datasets[lance_fw])


def test_instance_attributes(datasets: dict[Any, Any]) -> None:
    ours, theirs = datasets[lance_fw], datasets[lance]
    assert ours.uri.rstrip("/").endswith("/d") and theirs.uri.rstrip("/").endswith("/d")
    assert ours.get_fragment(1).metadata.physical_rows == theirs.get_fragment(1).metadata.physical_rows == 900
