"""``lance_fw.write_dataset``: pylance's options checked, then the table layer's ``plan_write`` ->
``WritePlan.write`` -> ``WritePlan.commit``."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_fw.errors import InvalidArgumentError
from lance_fw.file.legacy_v0_1 import LEGACY_VERSION
from lance_fw.file.legacy_v0_1_write import MAX_ROWS_PER_GROUP
from lance_fw.options import CommitLock, Unsupported, Uri, refuse, uri_string
from lance_fw.table.write import (
    COMMIT_MESSAGE_KEY,
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    WritePlan,
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


#: pylance's write options lance_fw does not implement (``write_dataset`` / ``write_fragments``
#: take some of them each), with the one value it accepts: pylance's default.
UNSUPPORTED_WRITE_OPTIONS: dict[str, Any] = {
    "return_transaction": False,
    "progress": None,
    "enable_v2_manifest_paths": True,
    "enable_stable_row_ids": False,  # write_dataset honours it (creating a dataset)
    "auto_cleanup_options": None,
    "initial_bases": None,
    "target_bases": None,
    "target_all_bases": None,
    "base_store_params": None,
    "external_blob_mode": "reference",
    "allow_external_blob_outside_bases": False,
    "blob_pack_file_size_threshold": None,
    "namespace_client": None,
    "table_id": None,
    "session": None,
}
#: Of those, the ones pylance applies only to a dataset the write creates (``write_dataset``
#: checks them once it knows whether it appends).
STABLE_ROW_IDS_OPTION = "enable_stable_row_ids"
NEW_DATASET_OPTIONS = ("enable_v2_manifest_paths", STABLE_ROW_IDS_OPTION)
#: How ``write_dataset`` names a table instead of a uri (``lance_fw.namespace``; still refused by
#: ``write_fragments``).
NAMESPACE_OPTIONS = ("namespace_client", "table_id")


def refuse_write_options(function: str, arguments: Mapping[str, Any], skip: Collection[str] = ()) -> None:
    """Raise for the first unsupported write option among ``function``'s ``arguments`` (its
    parameters by name) set to something other than pylance's default; ``skip`` names those not
    checked (yet)."""
    given = {k: arguments[k] for k in UNSUPPORTED_WRITE_OPTIONS if k in arguments and k not in skip}
    refuse(function, given, UNSUPPORTED_WRITE_OPTIONS)


def plan_data_write(
    data: Any,
    uri: str,
    schema: pa.Schema | None,
    mode: str,
    arguments: Mapping[str, Any],
    keep_dataset_version: bool = False,
) -> tuple[WritePlan, Iterator[pa.RecordBatch]]:
    """The table layer's plan for writing ``data`` (and its batches) from the file-shaping options
    ``write_dataset`` and ``write_fragments`` share, read from their ``arguments`` by name.
    ``keep_dataset_version``: see ``plan_write`` (True for pylance's ``write_dataset`` and
    ``write_fragments``, False for ``LanceFragment.create``)."""
    arrow_schema, batches = as_reader(data, schema)
    plan = plan_write(
        uri,
        schema if schema is not None else arrow_schema,
        mode,
        legacy_version(arguments["use_legacy_format"], arguments["data_storage_version"]),
        arguments["storage_options"],
        arguments["max_rows_per_file"],
        arguments["max_bytes_per_file"],
        arguments["max_page_bytes"],
        allow_subset=True,
        # None is plan_write's "inherit" (rewrites only): a user's None means False
        allow_plugin_encodings=False
        if arguments["allow_plugin_encodings"] is None
        else arguments["allow_plugin_encodings"],
        keep_dataset_version=keep_dataset_version,
    )
    if plan.version == LEGACY_VERSION and arguments.get(MAX_ROWS_PER_GROUP):  # rows per 0.1 batch
        plan.options[MAX_ROWS_PER_GROUP] = int(arguments[MAX_ROWS_PER_GROUP])
    return plan, batches


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
    namespace_client: Any = None,
    table_id: list | None = None,
    session: Unsupported = None,
    allow_plugin_encodings: bool = False,
) -> LanceDataset:
    """Write ``data_obj`` as a new dataset (``create``), more rows (``append``) or a replacement
    (``overwrite``). ``max_rows_per_group`` (a 0.1-format setting) and ``data_cache_bytes`` (a
    write cache) do not change what v2 files hold; options lance_fw lacks raise by name.
    ``allow_plugin_encodings`` (lance_fw's own): let plugin encodings pylance cannot read write
    columns; the manifest then records the plugins and pylance refuses the dataset at open."""
    arguments = dict(locals())  # every option by name, before any other local exists
    from lance_fw.api.dataset import LanceDataset

    refuse_write_options("write_dataset", arguments, skip=(*NEW_DATASET_OPTIONS, *NAMESPACE_OPTIONS))
    if namespace_client is not None or table_id is not None:
        if uri is not None or namespace_client is None or table_id is None:
            raise InvalidArgumentError("write_dataset: give either uri, or namespace_client and table_id")
        from lance_fw.namespace import resolve_write_uri  # the same rank: imported when used

        uri, found = resolve_write_uri(namespace_client, table_id, mode)
        storage_options = arguments["storage_options"] = storage_options or found
    if uri is None:
        raise InvalidArgumentError("write_dataset: uri (or namespace_client and table_id) is required")
    plan, batches = plan_data_write(
        data_obj, uri_string(uri), schema, mode, arguments, keep_dataset_version=True
    )
    if plan.mode != "append":  # pylance applies these two only to a dataset the write creates
        refuse_write_options(
            "write_dataset", {k: arguments[k] for k in NEW_DATASET_OPTIONS if k != STABLE_ROW_IDS_OPTION}
        )
        if not isinstance(enable_stable_row_ids, bool):
            raise InvalidArgumentError(
                f"{STABLE_ROW_IDS_OPTION} must be True or False, got {enable_stable_row_ids!r}"
            )
        plan = dataclasses.replace(plan, stable_row_ids=enable_stable_row_ids)
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
