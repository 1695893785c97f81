"""Every hook of the lance_fw kernel, one short docstringed function each.

Built-in features (plugins/) and third-party packages implement these through the ``lance_fw``
entry-point group. Hooks that pick *one* implementation are ``firstresult``: the most recently
registered plugin answers first, and built-ins mark themselves ``trylast`` so an installed
third-party plugin can take over.
"""

# mypy: disable-error-code="empty-body"
# (hook specs are signatures: pluggy never runs their bodies, so they return nothing)

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:  # the kernel's interfaces, named for readers of this file
    from lance_fw.interfaces import (
        ColumnEncoder,
        ColumnSpec,
        CommitHandler,
        DeletionCodec,
        KindDecoder,
        PageDecoder,
    )
    from lance_fw.io.storage import Storage

hookspec = pluggy.HookspecMarker("lance_fw")
hookimpl = pluggy.HookimplMarker("lance_fw")


@hookspec
def lance_page_decoders() -> Mapping[str, PageDecoder]:
    """Page decoders keyed by the type URL of a page's ``google.protobuf.Any`` encoding.

    e.g. ``{"/lance.encodings.ArrayEncoding": decode_v2_0_page}``. A file whose page names a URL
    no plugin provides raises ``UnsupportedEncodingError`` naming the URL.

    Optional capability: a decoder object with a ``decode_rows(encoding, page, rows)`` method
    (``file.encoding.PageRowDecoder``) decodes only the requested rows, reading only the byte
    ranges they need; ``take`` and filtered scans use it. Without it, whole pages are decoded.
    """


@hookspec
def lance_kind_decoders() -> Mapping[tuple[str, str], KindDecoder]:
    """Decoders for one message kind inside a built-in encoding family.

    Keyed by ``(family, kind)`` where family is the oneof message (``"lance.encodings.ArrayEncoding"``)
    and kind the oneof member name (``"flat"``, ``"binary"``, ...), so a plugin can add or replace
    one kind without re-implementing the whole family.
    """


@hookspec(firstresult=True)
def lance_select_encoder(column: ColumnSpec, options: Mapping[str, Any]) -> ColumnEncoder | None:
    """Return the encoder for one column of a data file, or None to let another plugin decide.

    ``column`` carries the Lance field, the Arrow type, field metadata (``lance-encoding:*`` hints)
    and the file version; ``options`` are the write options. The kernel checks the answer is a
    ``ColumnEncoder`` (has a callable ``encode``): anything else is a ``PluginLoadError`` naming
    the plugin.
    """


@hookspec(firstresult=True)
def lance_storage(uri: str, options: Mapping[str, Any]) -> Storage | None:
    """Return a ``Storage`` for ``uri`` (by scheme), or None if this plugin does not handle it.

    ``options`` are the user's ``storage_options``; every key in them has been declared by some
    plugin's ``lance_storage_options`` (unknown keys are refused before this hook runs); keep them
    as ``Storage.options``. An answer that is not a ``Storage`` is a ``PluginLoadError`` naming the
    plugin. A storage whose ``put_if_absent`` is atomic across processes sets
    ``atomic_put_if_absent = True`` and needs no commit handler of its own (see below).
    """


@hookspec(firstresult=True)
def lance_commit_handler(storage: Storage, uri: str, options: Mapping[str, Any]) -> CommitHandler | None:
    """Return the handler that atomically creates a manifest only if it is absent, or None.

    ``options`` are the same ``storage_options`` the storage was opened with: the per-plugin
    configuration channel (e.g. where an external manifest store lives). An implementation may
    leave ``options`` out of its signature if it needs none. The answer must be a
    ``CommitHandler`` (else ``PluginLoadError`` naming the plugin); return None for a storage you
    cannot make safe against writers in other processes.

    Built in: the generic ``commit_put_if_absent`` handler answers (``trylast``) for every storage
    with ``atomic_put_if_absent``, and ``commit_fsspec`` for in-process ``memory://``. A scheme no
    handler answers for cannot be written (``StorageError`` listing the installed handlers) unless
    the caller passes pylance's ``commit_lock``, which replaces the handler.
    """


@hookspec
def lance_storage_options() -> Mapping[str, str]:
    """The ``storage_options`` keys this plugin reads, each with a one-line description.

    The kernel refuses a key no plugin declares (``InvalidArgumentError`` listing the known ones),
    so a misspelt option is never silently ignored. Two plugins declaring one key conflict.
    """


@hookspec
def lance_deletion_codecs() -> Mapping[int, DeletionCodec]:
    """Deletion-file codecs keyed by ``DeletionFile.file_type`` (0 = Arrow IPC, 1 = roaring)."""


@hookspec
def lance_index_types() -> Mapping[str, Any]:
    """Scalar index types keyed by pylance's ``index_type`` name (``"BTREE"``, ``"BITMAP"`` ...): each
    value a ``lance_fw.interfaces.ScalarIndexType``. The kernel matches an index in a manifest to its
    plugin by ``type_url``; two plugins claiming one name or type url conflict."""


@hookspec
def lance_vector_index_types() -> Mapping[str, Any]:
    """Vector index types keyed by pylance's ``index_type`` name (``"IVF_PQ"`` ...): each value a
    ``lance_fw.interfaces.VectorIndexType``. Separate from ``lance_index_types`` because every
    vector index shares one details type url and is searched, not filtered: the kernel matches a
    manifest's vector index to its plugin by the name its ``VectorIndexDetails`` spell
    (``IVF_PQ`` for PQ compression), and ``create_index`` / ``nearest=`` use these types only."""
