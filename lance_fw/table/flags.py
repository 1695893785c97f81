"""Manifest feature flags: refuse what we cannot honour instead of misreading it."""

from __future__ import annotations

import json
from collections.abc import Mapping

from lance_fw._proto import table_pb2
from lance_fw.errors import CorruptFileError, UnsupportedFeatureError

DELETION_FILES = 1
STABLE_ROW_IDS = 2
USE_V2_FORMAT_DEPRECATED = 4
TABLE_CONFIG = 8
BASE_PATHS = 16
DISABLE_TRANSACTION_FILE = 32
#: lance_fw's reserved bit: some data files hold pages of a plugin encoding pylance cannot read
#: (written under ``allow_plugin_encodings=True``). Set in reader and writer flags while the config
#: key ``PLUGIN_ENCODINGS_KEY`` names plugins. pylance 14 refuses every reader flag it does not know
#: at open ("This dataset cannot be read by this version of Lance"); Lance assigns its flags upwards
#: from bit 0 (pylance 14 knows some below bit 16), so a high bit stays clear of them.
PLUGIN_ENCODINGS = 1 << 48
#: Manifest config key: JSON object, plugin (entry-point) name -> distribution ("name version")
#: whose encodings the dataset's data files use. lance_fw opens the dataset only with those installed.
PLUGIN_ENCODINGS_KEY = "lance_fw.plugin_encodings"

_NAMES = {
    1: "DELETION_FILES",
    2: "STABLE_ROW_IDS",
    4: "USE_V2_FORMAT_DEPRECATED",
    8: "TABLE_CONFIG",
    16: "BASE_PATHS",
    32: "DISABLE_TRANSACTION_FILE",
    64: "UNSTABLE_DATA_OVERLAY_FILES",
    128: "MEM_WAL_INDEX_CATCHUP",
    PLUGIN_ENCODINGS: "lance_fw PLUGIN_ENCODINGS",
}
READABLE = (
    DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG | DISABLE_TRANSACTION_FILE
)
WRITABLE = DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG


def _describe(bits: int) -> str:
    names = [_NAMES.get(1 << i, f"unknown bit {1 << i}") for i in range(64) if bits >> i & 1]
    return ", ".join(names)


def check_readable(where: str, reader_flags: int, config: Mapping[str, str] | None = None) -> None:
    """Refuse a manifest whose reader flags need what lance_fw lacks. ``PLUGIN_ENCODINGS`` is
    honoured when every plugin the manifest's ``config`` records is installed."""
    _check_flags(where, reader_flags, READABLE, config, "read")


def check_writable(where: str, writer_flags: int, config: Mapping[str, str] | None = None) -> None:
    """As ``check_readable``, for writers: a writer rewrites and copies data files, so it needs the
    plugins too."""
    _check_flags(where, writer_flags, WRITABLE, config, "write")


def _check_flags(where: str, flags: int, supported: int, config: Mapping[str, str] | None, what: str) -> None:
    """``flags`` beyond ``supported`` are refused, but for ``PLUGIN_ENCODINGS`` when its plugins are
    installed; ``what`` ("read" / "write") names the side in the errors."""
    missing = flags & ~supported
    if missing & PLUGIN_ENCODINGS:
        _check_plugins_installed(where, config, what)
        missing &= ~PLUGIN_ENCODINGS
    if missing:
        raise UnsupportedFeatureError(
            f"{where}: the dataset needs {what}r features lance_fw does not support: {_describe(missing)}"
        )


def recorded_plugins(where: str, config: Mapping[str, str] | None) -> dict[str, str]:
    """The plugins (name -> distribution) a manifest's config records; {} when none."""
    raw = (config or {}).get(PLUGIN_ENCODINGS_KEY)
    if raw is None:
        return {}
    try:
        plugins = json.loads(raw)
    except ValueError:
        plugins = None
    if not isinstance(plugins, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in plugins.items()
    ):
        raise CorruptFileError(
            where,
            f"manifest config {PLUGIN_ENCODINGS_KEY!r} is not a JSON object of "
            f"plugin name -> distribution: {raw!r}",
        )
    return plugins


def _check_plugins_installed(where: str, config: Mapping[str, str] | None, what: str) -> None:
    from lance_fw.plugin_manager import get_plugin_manager

    plugins = recorded_plugins(where, config)
    if not plugins:
        raise CorruptFileError(
            where,
            f"the manifest sets the PLUGIN_ENCODINGS feature flag but its config "
            f"does not name the plugins ({PLUGIN_ENCODINGS_KEY!r})",
        )
    pm = get_plugin_manager()
    absent = {name: dist for name, dist in plugins.items() if pm.get_plugin(name) is None}
    if absent:
        listed = ", ".join(
            f"{name!r} ({dist or 'distribution unknown'})" for name, dist in sorted(absent.items())
        )
        raise UnsupportedFeatureError(
            f"{where}: the dataset's data files use encodings of the lance_fw plugin(s) {listed}, which "
            f"are not loaded; install (or enable) them to {what} this dataset"
        )


def record_plugin_encodings(manifest: table_pb2.Manifest, plugins: Mapping[str, str], replace: bool) -> None:
    """Set ``PLUGIN_ENCODINGS_KEY`` in a new manifest's config: the plugins its new files use, plus
    (unless ``replace``: an overwrite drops every old file) those the base manifest recorded, whose
    files stay. ``flags_for`` derives the feature flag from the key."""
    kept = {} if replace else recorded_plugins("manifest", manifest.config)
    merged = {**kept, **plugins}
    if merged:
        manifest.config[PLUGIN_ENCODINGS_KEY] = json.dumps(merged, sort_keys=True, separators=(",", ":"))
    elif PLUGIN_ENCODINGS_KEY in manifest.config:
        del manifest.config[PLUGIN_ENCODINGS_KEY]


def has_stable_row_ids(manifest: table_pb2.Manifest | None) -> bool:
    """Whether a version (None: no version yet) has stable row ids: its fragments carry the ids
    of their rows, which indices, compaction and rewrites keep."""
    return manifest is not None and bool(manifest.writer_feature_flags & STABLE_ROW_IDS)


def flags_for(manifest: table_pb2.Manifest, stable_row_ids: bool = False) -> int:
    """Writer flags a manifest needs, from what it contains (readers get the same minus TABLE_CONFIG)."""
    flags = STABLE_ROW_IDS if stable_row_ids else 0
    if any(f.HasField("deletion_file") for f in manifest.fragments):
        flags |= DELETION_FILES
    if len(manifest.config):
        flags |= TABLE_CONFIG
    if PLUGIN_ENCODINGS_KEY in manifest.config:
        flags |= PLUGIN_ENCODINGS
    return flags
