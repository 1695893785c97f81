"""``lance_fw.write_dataset``: pylance's options checked, then the table layer's ``plan_write`` ->
``WritePlan.write`` -> ``WritePlan.commit``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_fw.errors import InvalidArgumentError
from lance_fw.options import CommitLock, Unsupported, Uri, refuse, uri_string
from lance_fw.table.write import (
    COMMIT_MESSAGE_KEY,
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    as_reader,
    plan_write,
)

if TYPE_CHECKING:
    from lance_fw.api.dataset import LanceDataset


def legacy_version(use_legacy_format: bool | None, data_storage_version: str | None) -> str | None:
    """pylance's deprecated ``use_legacy_format``: True means ``"legacy"``, False ``"stable"``."""
    if use_legacy_format is None:
        return data_storage_version
    return "legacy" if use_legacy_format else "stable"


def refuse_write_options(
    function: str,
    commit_lock: CommitLock | None = None,
    progress: Unsupported = None,
    enable_v2_manifest_paths: bool = True,
    enable_stable_row_ids: bool = False,
    auto_cleanup_options: Unsupported = None,
    initial_bases: Unsupported = None,
    target_bases: Unsupported = None,
    target_all_bases: Unsupported = None,
    base_store_params: Unsupported = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    blob_pack_file_size_threshold: int | None = None,
    namespace_client: Unsupported = None,
    table_id: Unsupported = None,
    session: Unsupported = None,
) -> None:
    """The write options of pylance's ``write_dataset``/``write_fragments`` lance_fw does not
    implement: each is accepted only at pylance's default."""
    given = dict(locals())
    del given["function"]
    refuse(
        function,
        given,
        {
            "enable_v2_manifest_paths": True,
            "enable_stable_row_ids": False,
            "external_blob_mode": "reference",
            "allow_external_blob_outside_bases": False,
        },
    )


def write_dataset(
    data_obj: Any,
    uri: Uri | None = None,
    schema: pa.Schema | None = None,
    mode: str = "create",
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: int | None = None,
    max_page_bytes: int | None = None,
    commit_lock: CommitLock | None = None,
    progress: Unsupported = None,
    storage_options: dict | None = None,
    data_storage_version: str | None = None,
    use_legacy_format: bool | None = None,
    enable_v2_manifest_paths: bool = True,
    enable_stable_row_ids: bool = False,
    auto_cleanup_options: Unsupported = None,
    commit_message: str | None = None,
    transaction_properties: dict | None = None,
    initial_bases: Unsupported = None,
    target_bases: Unsupported = None,
    target_all_bases: Unsupported = None,
    base_store_params: Unsupported = None,
    external_blob_mode: str = "reference",
    allow_external_blob_outside_bases: bool = False,
    blob_pack_file_size_threshold: int | None = None,
    namespace_client: Unsupported = None,
    table_id: Unsupported = None,
    session: Unsupported = None,
    allow_plugin_encodings: bool = False,
) -> LanceDataset:
    """Write ``data_obj`` as a new dataset (``create``), more rows (``append``) or a replacement
    (``overwrite``). ``max_rows_per_group`` (a 0.1-format setting) and ``data_cache_bytes`` (a
    write cache) do not change what v2 files hold; options lance_fw lacks raise by name.
    ``allow_plugin_encodings`` (lance_fw's own): let plugin encodings pylance cannot read write
    columns; the manifest then records the plugins and pylance refuses the dataset at open."""
    from lance_fw.api.dataset import LanceDataset

    refuse_write_options(
        "write_dataset",
        None,
        progress,
        True,
        False,
        auto_cleanup_options,
        initial_bases,
        target_bases,
        target_all_bases,
        base_store_params,
        external_blob_mode,
        allow_external_blob_outside_bases,
        blob_pack_file_size_threshold,
        namespace_client,
        table_id,
        session,
    )
    if uri is None:
        raise InvalidArgumentError(
            "write_dataset: uri is required (namespace_client/table_id are not supported)"
        )
    arrow_schema, batches = as_reader(data_obj, schema)
    plan = plan_write(
        uri_string(uri),
        schema if schema is not None else arrow_schema,
        mode,
        legacy_version(use_legacy_format, data_storage_version),
        storage_options,
        max_rows_per_file,
        max_bytes_per_file,
        max_page_bytes,
        allow_subset=True,
        allow_plugin_encodings=bool(allow_plugin_encodings)
        if allow_plugin_encodings is None
        else allow_plugin_encodings,
    )  # None is plan_write's "inherit" (rewrites only)
    if plan.mode != "append":  # pylance applies these two only to a dataset the write creates
        refuse_write_options(
            "write_dataset",
            enable_v2_manifest_paths=enable_v2_manifest_paths,
            enable_stable_row_ids=enable_stable_row_ids,
        )
    fragments = plan.write(batches)
    properties = dict(transaction_properties or {})
    if commit_message:
        properties[COMMIT_MESSAGE_KEY] = commit_message
    version = plan.commit(fragments, properties, commit_lock)
    return LanceDataset(
        plan.uri,
        version=version,
        storage_options=storage_options,
        commit_lock=commit_lock,
        _storage=plan.storage(),
    )


__all__ = ["write_dataset"]
