"""``lance_fw.arrow`` against pylance's ``lance.arrow``: bfloat16 rounding and printing, the image
extension types' names, storage and metadata, ``cast``, and datasets with those columns written by
one library and read by the other (crossing 1024/4096-value page boundaries)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import lance
import lance.arrow as la
import numpy as np
import pyarrow as pa
import pytest

import lance_fw
import lance_fw.arrow as fa

#: Rows of the dataset tests: past 4096 and 1024 boundaries, in several fragments
ROWS = 5000
ROWS_PER_FILE = 2100


def _special_floats() -> list[float | None]:
    """Values where bfloat16 rounding is delicate: ties to even, NaN, infinities, subnormals, overflow."""
    ties = [1.0 + k * 2.0**-8 for k in range(8)] + [1.0 + (2 * k + 1) * 2.0**-9 for k in range(8)]
    return [
        None,
        0.0,
        -0.0,
        float("nan"),
        float("inf"),
        -float("inf"),
        1e40,
        -1e40,
        2.0**-133,
        3.4e38,
        1e-45,
        65504.0,
        3.14159,
        -2.718281828,
    ] + ties


def _random_floats(n: int, seed: int = 3) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(rng.standard_normal(n) * 10.0 ** rng.integers(-40, 39, n))


def test_bfloat16_array_storage_and_printing_match():
    values = _special_floats() + _random_floats(3000)
    ours, theirs = fa.bfloat16_array(values), la.bfloat16_array(values)
    assert ours.storage.equals(theirs.storage)
    assert ours.type.extension_name == theirs.type.extension_name == "lance.bfloat16"
    assert ours.type.__arrow_ext_serialize__() == theirs.type.__arrow_ext_serialize__() == b""
    assert [str(v) for v in ours.to_pylist()] == [str(v) for v in theirs.to_pylist()]
    assert str(ours) == str(theirs)
    short = values[:15]
    assert str(fa.bfloat16_array(short)) == str(la.bfloat16_array(short))


def test_bfloat16_scalar_values_and_comparisons_match():
    values = [v for v in _special_floats() if v is not None] + _random_floats(200, seed=9)
    for v in values:
        ours, theirs = fa.BFloat16(v), la.BFloat16(v)
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
        assert ours.as_float() == pytest.approx(theirs.as_float(), nan_ok=True)
    pairs = [(1.0, 2.0), (2.0, 1.0), (1.5, 1.5), (float("nan"), 1.0), (-0.0, 0.0)]
    for a, b in pairs:
        for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
            got = getattr(fa.BFloat16(a), op)(fa.BFloat16(b))
            assert got == getattr(la.BFloat16(a), op)(la.BFloat16(b)), (a, b, op)
    assert (fa.BFloat16(1.0) == 1.0) == (la.BFloat16(1.0) == 1.0)
    assert fa.BFloat16.from_bytes(b"\x80\x3f") == fa.BFloat16(1.0)
    ours_scalar, theirs_scalar = fa.bfloat16_array([2.5])[0], la.bfloat16_array([2.5])[0]
    assert str(ours_scalar.as_py()) == str(theirs_scalar.as_py())
    # pylance's scalar == imports ml_dtypes first (absent here); lance_fw's needs it only for its scalars
    assert ours_scalar == fa.BFloat16(2.5) and ours_scalar == fa.bfloat16_array([2.5])[0]
    assert not ours_scalar == 2.5
    assert fa.bfloat16_array([None])[0].as_py() is None


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.BFloat16("a"),
        lambda m: m.BFloat16.from_bytes(b"abc"),
        lambda m: m.bfloat16_array(["x"]),
        lambda m: m.bfloat16_array([1.0, None]).to_numpy(),
        lambda m: hash(m.BFloat16(1.0)),
    ],
)
def test_bfloat16_errors_match(call):
    with pytest.raises(Exception) as theirs:
        call(la)
    with pytest.raises(Exception) as ours:
        call(fa)
    assert theirs.type.__mro__[0] in ours.type.__mro__ or issubclass(ours.type, theirs.type)


def test_image_extension_types_serialise_as_pylance():
    cases = [
        (lambda m: m.ImageURIType(), None),
        (lambda m: m.ImageURIType(pa.large_string()), None),
        (lambda m: m.EncodedImageType(), None),
        (lambda m: m.EncodedImageType(pa.large_binary()), None),
        (lambda m: m.FixedShapeImageTensorType(pa.uint8(), (2, 3, 4)), None),
        (lambda m: m.FixedShapeImageTensorType(pa.float32(), [5]), None),
    ]
    for make, _ in cases:
        ours, theirs = make(fa), make(la)
        assert ours.extension_name == theirs.extension_name
        assert ours.storage_type.equals(theirs.storage_type)
        assert ours.__arrow_ext_serialize__() == theirs.__arrow_ext_serialize__()
    for bad in (lambda m: m.ImageURIType(pa.int32()), lambda m: m.EncodedImageType(pa.string())):
        with pytest.raises(ValueError):
            bad(la)
        with pytest.raises(ValueError):
            bad(fa)


def _ipc_roundtrip(array: pa.Array) -> pa.Array:
    """An array through Arrow IPC: the reader rebuilds registered extension types by name."""
    sink = pa.BufferOutputStream()
    batch = pa.record_batch([array], names=["c"])
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return pa.ipc.open_stream(sink.getvalue()).read_all().column("c").combine_chunks()


def _image_arrays(m):
    pixels = np.arange(3 * 2 * 2 * 3, dtype=np.uint8).reshape(3, 2, 2, 3)
    return [
        m.ImageArray.from_array(pa.array(["a.png", "b.png", "c.png"], pa.large_string())),
        m.ImageArray.from_array(["x.png", "y.png"]),
        m.ImageURIArray.from_uris(["p/1.png", "p/2.png"]),
        m.ImageArray.from_array(pa.array([b"\x89PNG", b"jpg"], pa.large_binary())),
        m.ImageArray.from_array(pa.FixedShapeTensorArray.from_numpy_ndarray(pixels)),
    ]


def test_image_arrays_match_and_cross_ipc():
    for ours, theirs in zip(_image_arrays(fa), _image_arrays(la), strict=True):
        assert type(ours).__name__ == type(theirs).__name__
        assert ours.type.extension_name == theirs.type.extension_name
        assert ours.type.__arrow_ext_serialize__() == theirs.type.__arrow_ext_serialize__()
        assert ours.storage.equals(theirs.storage)
        assert ours.to_pylist() == theirs.to_pylist()
        assert [s.as_py() for s in ours] == [s.as_py() for s in theirs]
        # pylance (imported) owns the registry: our arrays come back as its types, values intact
        back = _ipc_roundtrip(ours)
        assert type(back.type) is type(theirs.type) and back.storage.equals(theirs.storage)
    # a null slot: pylance's ImageScalar.as_py raises AttributeError there; lance_fw gives None
    assert fa.ImageArray.from_array(pa.array(["a", None])).to_pylist() == ["a", None]
    with pytest.raises(TypeError):
        la.ImageArray.from_array(42)
    with pytest.raises(TypeError):
        fa.ImageArray.from_array(42)


def test_tensor_and_codec_paths_match(tmp_path):
    pixels = np.random.default_rng(1).integers(0, 255, (4, 3, 2, 3), dtype=np.uint8)
    for path, blob in ((tmp_path / "a.bin", b"one"), (tmp_path / "b.bin", b"\x00two")):
        path.write_bytes(blob)
    uris = [str(tmp_path / "a.bin"), str(tmp_path / "b.bin")]
    ours = fa.ImageURIArray.from_uris(uris).read_uris(pa.large_binary())
    theirs = la.ImageURIArray.from_uris(uris).read_uris(pa.large_binary())
    assert ours.type.storage_type.equals(theirs.type.storage_type) and ours.storage.equals(theirs.storage)

    def decode(_: pa.Array) -> np.ndarray:
        return pixels

    def encode(images: np.ndarray) -> pa.Array:
        return pa.array([bytes(img.tobytes()) for img in images], pa.binary())

    for m in (fa, la):
        tensor = m.ImageArray.from_array(pa.array([b"a", b"b", b"c", b"d"])).to_tensor(decode)
        assert tensor.type.extension_name == "lance.arrow.fixed_shape_image_tensor"
        assert tensor.type.__arrow_ext_serialize__() == b'{"shape": [3, 2, 3]}'
        np.testing.assert_array_equal(tensor.to_numpy(), pixels)
        encoded = tensor.to_encoded(encode)
        assert encoded.storage.to_pylist() == [img.tobytes() for img in pixels]
    # without Pillow both refuse the default codec with ValueError
    for m in (fa, la):
        with pytest.raises(ValueError):
            m.ImageArray.from_array(pa.array([b"a"])).to_tensor()


def test_cast_to_and_from_bfloat16_matches_pylance_rounding():
    floats = [v for v in _special_floats() if v is not None] + _random_floats(2000, seed=4)
    for source in (pa.float64(), pa.float32()):
        arr = pa.array(floats, source)
        for target in ("bf16", "bfloat16", fa.BFloat16Type()):
            got = fa.cast(arr, target)
            assert got.storage.equals(la.bfloat16_array(arr.to_pylist()).storage)
    back = fa.cast(la.bfloat16_array(floats), pa.float32())
    expected = [la.BFloat16(v).as_float() for v in floats]
    np.testing.assert_array_equal(back.to_numpy(), np.array(expected, np.float32))
    lists = pa.FixedSizeListArray.from_arrays(pa.array(floats[:20], pa.float64()), 4)
    as_bf16 = fa.cast(lists, pa.list_(pa.float32(), 4))
    assert as_bf16.type == pa.list_(pa.float32(), 4)
    with pytest.raises(ValueError):
        fa.cast(lists, pa.list_(pa.float32(), 5))
    with pytest.raises(ValueError):
        fa.cast(pa.array([1, 2]), "bf16")
    with pytest.raises(ValueError):
        fa.cast(la.bfloat16_array([1.0]), pa.int32())
    assert fa.cast(pa.array([1, 2]), pa.float64()).equals(pa.array([1.0, 2.0]))


def _extension_table(m) -> pa.Table:
    floats = _random_floats(ROWS, seed=11)
    floats[5] = None
    pixels = np.arange(ROWS * 4, dtype=np.uint8).reshape(ROWS, 2, 2, 1)
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "b": m.bfloat16_array(floats),
            "u": m.ImageURIArray.from_uris([f"img/{i}.png" for i in range(ROWS)]),
            "e": m.ImageArray.from_array(pa.array([bytes([i % 256]) * (i % 7) for i in range(ROWS)])),
            "t": m.ImageArray.from_array(pa.FixedShapeTensorArray.from_numpy_ndarray(pixels)),
        }
    )


def _extension_signature(schema: pa.Schema) -> list[tuple[str, str | None, bytes | None, str]]:
    out = []
    for f in schema:
        t = f.type
        if isinstance(t, pa.ExtensionType):
            out.append((f.name, t.extension_name, t.__arrow_ext_serialize__(), str(t.storage_type)))
        else:
            md = f.metadata or {}
            name = md.get(b"ARROW:extension:name")
            out.append((f.name, name.decode() if name else None, md.get(b"ARROW:extension:metadata"), str(t)))
    return out


def test_lance_fw_reads_pylance_extension_columns_storage_and_tags(tmp_path):
    """What lance_fw reads today: the storage values and the extension name/metadata (as field
    metadata; the type itself is the next test)."""
    written = lance.write_dataset(_extension_table(la), str(tmp_path / "py"), max_rows_per_file=ROWS_PER_FILE)
    theirs = written.to_table()
    ours = lance_fw.dataset(str(tmp_path / "py")).to_table()
    assert _extension_signature(ours.schema) == _extension_signature(theirs.schema)
    for name in ("b", "u", "e", "t"):
        ours_col = ours.column(name).combine_chunks()
        theirs_col = theirs.column(name).combine_chunks()
        ours_storage = ours_col.storage if isinstance(ours_col, pa.ExtensionArray) else ours_col
        assert ours_storage.equals(theirs_col.storage), name


def test_lance_fw_reads_pylance_extension_columns_as_extension_types(tmp_path):
    """Extension columns come back as the registered extension types, with pylance's values."""
    path = str(tmp_path / "py")
    lance.write_dataset(_extension_table(la), path, max_rows_per_file=ROWS_PER_FILE)
    ours, theirs = lance_fw.dataset(path).to_table(), lance.dataset(path).to_table()
    assert isinstance(ours.schema.field("b").type, pa.ExtensionType)
    assert _extension_signature(ours.schema) == _extension_signature(theirs.schema)
    assert ours.equals(theirs)


def test_pylance_reads_lance_fw_extension_columns(tmp_path):
    """lance_fw stores an extension column as pylance does (storage type, name and parameters in
    the field metadata): pylance reads back the same types and values from either writer."""
    lance_fw.write_dataset(_extension_table(fa), str(tmp_path / "fw"), max_rows_per_file=ROWS_PER_FILE)
    lance.write_dataset(_extension_table(la), str(tmp_path / "py"), max_rows_per_file=ROWS_PER_FILE)
    from_ours = lance.dataset(str(tmp_path / "fw")).to_table()
    from_theirs = lance.dataset(str(tmp_path / "py")).to_table()
    assert _extension_signature(from_ours.schema) == _extension_signature(from_theirs.schema)
    assert from_ours.equals(from_theirs)
    assert lance_fw.dataset(str(tmp_path / "fw")).to_table().equals(from_theirs)


def test_registers_only_where_pylance_cannot():
    """Without pylance installed lance_fw.arrow registers its types (IPC rebuilds them); with
    pylance installed but not imported it registers nothing, so ``import lance`` still works."""
    hide_pylance = textwrap.dedent("""
        import importlib.abc, sys
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "lance" or name.startswith("lance."):
                    raise ModuleNotFoundError(name)
                return None
        sys.meta_path.insert(0, Hide())
    """)
    check = textwrap.dedent("""
        import pyarrow as pa, lance_fw.arrow as fa
        sink = pa.BufferOutputStream()
        batch = pa.record_batch([fa.bfloat16_array([1.0, 2.0])], names=["b"])
        with pa.ipc.new_stream(sink, batch.schema) as w:
            w.write_batch(batch)
        back = pa.ipc.open_stream(sink.getvalue()).read_all().column("b").type
        print(type(back).__module__)
    """)
    out = subprocess.run(
        [sys.executable, "-c", hide_pylance + check], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "lance_fw.arrow.bf16"
    both = "import lance_fw.arrow\nimport lance.arrow\nprint('ok')"
    out = subprocess.run([sys.executable, "-c", both], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
