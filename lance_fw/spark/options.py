"""Parsing the string options Spark hands a data source (``.option(key, value)``, case-insensitive).

Spark lower-cases every key before the data source sees it and never complains about keys a
source ignores, so a misspelt option (``batchsize``) or one from lance-spark (``max_row_per_file``)
used to be dropped silently. Every key is therefore checked here against the options of the
direction it is used in: lance-spark's spelling is an alias where it means the same thing, tuning
knobs that cannot change a result are accepted, a ``storage_options`` key an installed plugin reads
(pylance's ``aws_endpoint``, ``aws_access_key_id`` ...) is a storage option, as in lance-spark, and
everything else raises naming the key.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from datetime import datetime

from lance_fw.errors import InvalidArgumentError, UnsupportedFeatureError
from lance_fw.file.writer import ALLOW_PLUGIN_ENCODINGS

# -- option keys (lower case: the form Spark hands a Python data source) ----------------------
PATH, URI = "path", "uri"
STORAGE_OPTIONS = "storage_options"
VERSION, ASOF, TAG = "version", "asof", "tag"
COLUMNS, FILTER, BATCH_SIZE = "columns", "filter", "batch_size"
ROWS_PER_PARTITION, WITH_ROW_ADDRESS = "rows_per_partition", "with_row_address"
STARTING_VERSION = "starting_version"
MAX_ROWS_PER_FILE, MAX_BYTES_PER_FILE = "max_rows_per_file", "max_bytes_per_file"
DATA_STORAGE_VERSION, COMMIT_MESSAGE = "data_storage_version", "commit_message"
STREAM_ID, MAX_RECOVERY_LOOKBACK = "stream_id", "max_recovery_lookback"
#: Keys Spark itself adds to a streaming write's options.
CHECKPOINT_LOCATION, QUERY_NAME = "checkpointlocation", "queryname"

_COMMON = {
    PATH: "dataset URI (what .load(path) / .save(path) set)",
    URI: "same as path",
    STORAGE_OPTIONS: "JSON object handed to the storage plugin",
}
READ_OPTIONS = {
    **_COMMON,
    VERSION: "read this version number",
    ASOF: "read the latest version committed at or before this ISO-8601 timestamp",
    TAG: "read the version this tag names",
    COLUMNS: "columns to decode (JSON list or comma-separated)",
    FILTER: "Lance SQL filter, applied exactly on the executors",
    BATCH_SIZE: "rows per Arrow batch",
    ROWS_PER_PARTITION: "fragments with more rows are read by several tasks",
    WITH_ROW_ADDRESS: "add the _rowaddr column",
}
STREAM_READ_OPTIONS = {
    **{k: v for k, v in READ_OPTIONS.items() if k not in (VERSION, ASOF, TAG)},
    STARTING_VERSION: "version a new streaming query starts after (0: everything)",
}
WRITE_OPTIONS = {
    **_COMMON,
    MAX_ROWS_PER_FILE: "roll data files after this many rows",
    MAX_BYTES_PER_FILE: "roll data files after this many bytes",
    DATA_STORAGE_VERSION: "file format version of a new dataset (2.0, 2.1, 2.2)",
    COMMIT_MESSAGE: "stored in the transaction properties",
    ALLOW_PLUGIN_ENCODINGS: "true: columns may use plugin encodings pylance cannot read "
    "(the manifest records the plugins)",
}
STREAM_WRITE_OPTIONS = {
    **WRITE_OPTIONS,
    STREAM_ID: "name of the stream for replay detection (default: Spark's query id)",
    MAX_RECOVERY_LOOKBACK: "how many recent versions a commit searches for its own batch",
    CHECKPOINT_LOCATION: "Spark's checkpoint directory",
    QUERY_NAME: "Spark's query name",
}

#: lance-spark's spelling -> lance_fw's key, where both mean the same thing.
ALIASES = {
    "max_row_per_file": MAX_ROWS_PER_FILE,
    "file_format_version": DATA_STORAGE_VERSION,
    "streamingqueryid": STREAM_ID,
    "maxrecoverylookback": MAX_RECOVERY_LOOKBACK,
}
#: lance-spark options that only tune caches, prefetching or buffering: no effect on any result,
#: accepted (and ignored) so jobs written for lance-spark run unchanged.
TUNING_OPTIONS = {
    "block_size",
    "index_cache_size",
    "metadata_cache_size",
    "batch_readahead",
    "batch_prefetch_queue_depth",
    "topn_push_down",
    "max_rows_per_group",
    "use_queued_write_buffer",
    "queue_depth",
}
#: lance-spark options lance_fw does not implement: accepted only with the value that means what
#: lance_fw does anyway, else refused with the reason.
UNSUPPORTED_OPTIONS = {
    "pushdownfilters": (
        "false",
        (
            "Python data sources cannot push filters down safely in Spark 4.3 "
            "(see docs/spark.md); use the 'filter' option"
        ),
    ),
    "enable_stable_row_ids": ("false", "lance_fw cannot create datasets with stable row ids"),
    "use_large_var_types": ("false", "Spark's Python data source hands strings over with 32-bit offsets"),
    "write_mode": (None, "use DataFrameWriter.mode('append' | 'overwrite')"),
    "nearest": (
        None,
        (
            "vector search is not available through the Spark data source; "
            "use lance_fw.dataset(path).to_table(nearest=...)"
        ),
    ),
}


def check_options(options: Mapping[str, str], known: Mapping[str, str], what: str) -> dict[str, str]:
    """``options`` with lance-spark aliases renamed, after refusing any key ``known`` lacks.

    Raises InvalidArgumentError naming an unknown key (with the nearest known spelling and the
    full list), UnsupportedFeatureError for a lance-spark option lance_fw cannot honour.
    """
    out: dict[str, str] = {}
    for raw_key, value in options.items():
        key = raw_key.lower()
        if key in TUNING_OPTIONS:
            continue
        if key in UNSUPPORTED_OPTIONS:
            neutral, why = UNSUPPORTED_OPTIONS[key]
            if neutral is not None and str(value).strip().lower() == neutral:
                continue
            raise UnsupportedFeatureError(f"{what} option {raw_key!r}={value!r} is not supported: {why}")
        name = ALIASES.get(key, key)
        if name not in known and is_storage_option(key):
            name = key  # a pylance storage option of its own, as lance-spark takes them (storage_options())
        elif name not in known:
            close = difflib.get_close_matches(key, list(known) + list(ALIASES), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidArgumentError(
                f"unknown {what} option {raw_key!r}{hint}; known options: "
                f"{', '.join(sorted(known))} (lance-spark aliases: "
                f"{', '.join(f'{a}={t}' for a, t in ALIASES.items() if t in known)})"
            )
        if name in out and out[name] != value:
            raise InvalidArgumentError(
                f"{what} options {name!r} and its alias {raw_key!r} disagree: {out[name]!r} vs {value!r}"
            )
        out[name] = value
    return out


def dataset_uri(options: Mapping[str, str]) -> str:
    """``path`` (or ``uri``) with Spark's ``file:`` prefix removed (catalog tables add it)."""
    uri = options.get(PATH) or options.get(URI)
    if not uri:
        raise InvalidArgumentError(
            "the lance data source needs a path: .load(path) / .save(path) or .option('path', ...)"
        )
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    elif uri.startswith("file:"):
        uri = uri[len("file:") :]
    return uri.rstrip("/")


def int_option(options: Mapping[str, str], key: str, default: int | None = None) -> int | None:
    value = options.get(key)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be an integer, got {value!r}") from None
    if number < 0:
        raise InvalidArgumentError(f"option {key!r} must not be negative, got {value!r}")
    return number


def bool_option(options: Mapping[str, str], key: str) -> bool:
    value = str(options.get(key, "false")).strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise InvalidArgumentError(f"option {key!r} must be true or false, got {value!r}")
    return value in ("true", "1", "yes")


def version_options(options: Mapping[str, str]) -> dict:
    """``version`` / ``asof`` / ``tag`` as the keyword arguments ``LanceDataset`` takes (at most one:
    two ways of naming a version cannot both hold)."""
    given = [k for k in (VERSION, ASOF, TAG) if options.get(k)]
    if len(given) > 1:
        raise InvalidArgumentError(f"options {given} each choose a version: give only one")
    if options.get(TAG):
        return {"version": options[TAG]}
    if options.get(ASOF):
        try:
            return {"asof": datetime.fromisoformat(options[ASOF])}
        except ValueError:
            raise InvalidArgumentError(
                f"option 'asof' must be an ISO-8601 timestamp, got {options[ASOF]!r}"
            ) from None
    return {"version": int_option(options, VERSION)}


def columns_option(options: Mapping[str, str]) -> list[str] | None:
    """``columns`` as a JSON list or a comma-separated string."""
    value = options.get(COLUMNS)
    if not value:
        return None
    if value.lstrip().startswith("["):
        try:
            names = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"option 'columns' is not a JSON list: {exc}") from None
    else:
        names = [n.strip() for n in value.split(",")]
    if not all(isinstance(n, str) and n for n in names):
        raise InvalidArgumentError(f"option 'columns' must name columns, got {value!r}")
    return names


def is_storage_option(key: str) -> bool:
    """Whether ``key`` is a ``storage_options`` key some installed plugin reads (pylance's S3 keys,
    ``manifest_store`` ...): such a key is a Spark option of its own, as in lance-spark."""
    from lance_fw.plugin_manager import registry

    return key in registry.storage_options


def storage_options(options: Mapping[str, str]) -> dict | None:
    """The storage options (credentials, endpoints) for object stores: the JSON ``storage_options``
    option merged with every storage option key given as an option of its own
    (``.option("aws_endpoint", ...)``). A key given both ways must have one value."""
    value = options.get(STORAGE_OPTIONS)
    parsed: dict = {}
    if value:
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"option 'storage_options' is not a JSON object: {exc}") from None
        if not isinstance(parsed, dict):
            raise InvalidArgumentError("option 'storage_options' must be a JSON object")
    for key, given in options.items():
        key = key.lower()
        if key == STORAGE_OPTIONS or not is_storage_option(key):
            continue
        if key in parsed and str(parsed[key]) != str(given):
            raise InvalidArgumentError(
                f"storage option {key!r} is given as an option ({given!r}) and in "
                f"'storage_options' ({parsed[key]!r}); give one value"
            )
        parsed[key] = given
    return parsed or None
