"""lance_fw_delta: an example third-party lance_fw plugin.

It adds one page encoding, "delta + bit-packing for sorted integers", to the 2.0 data files that
lance_fw writes. A column opts in through its Arrow field metadata::

    pa.field("id", pa.int64(), metadata={"lance-encoding:delta": "true"})

The package registers this module in the ``lance_fw`` entry-point group (see ``pyproject.toml``),
so installing it is all it takes; ``lance_fw.plugins()`` then lists it as ``delta``.

Hooks implemented here:

* ``lance_select_encoder`` -- claims leaf integer-like columns that carry the metadata hint. It is
  *not* ``trylast``, so it answers before the built-in 2.0 encoder (which is) and wins the column;
  for every other column it returns None and the built-in encoder answers.
* ``lance_page_decoders`` -- maps ``/lance_fw_delta.DeltaBitpacked`` to the page decoder, so any
  lance_fw reader with this package installed can read the pages back.

The on-disk layout is documented in :mod:`lance_fw_delta.codec`.
"""

from __future__ import annotations

from lance_fw.hookspecs import hookimpl

from lance_fw_delta.codec import TYPE_URL, DeltaBitpackedEncoder, decode, storage_dtype

__version__ = "0.1.0"
__all__ = ["METADATA_KEY", "TYPE_URL", "DeltaBitpackedEncoder", "decode", "wants_delta"]

#: The field-metadata key a column sets to ``"true"`` to be delta-encoded.
METADATA_KEY = "lance-encoding:delta"

#: The data-file versions whose pages carry a bare ``Any`` page encoding (the 2.0 layout).
SUPPORTED_VERSIONS = {(2, 0)}


def wants_delta(column) -> bool:
    """True when this plugin should encode the column (see the module docstring)."""
    return (
        column.role == "leaf"
        and tuple(column.version) in SUPPORTED_VERSIONS
        and str(column.metadata.get(METADATA_KEY, "")).strip().lower() == "true"
        and storage_dtype(column.arrow_type) is not None
    )


@hookimpl
def lance_select_encoder(column, options):
    if not wants_delta(column):
        return None  # let the next plugin (in the end the built-in 2.0 encoder) decide
    return DeltaBitpackedEncoder(column.arrow_type)


@hookimpl
def lance_page_decoders():
    return {TYPE_URL: decode}
