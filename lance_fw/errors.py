"""The LanceError hierarchy: every failure a user can cause names what failed."""

from __future__ import annotations


class LanceError(Exception):
    """Base class of every error lance_fw raises on purpose."""


class DatasetNotFoundError(LanceError, FileNotFoundError, ValueError):
    """No dataset (no manifest) at the URI, or the requested version does not exist.

    Also a ``ValueError``: pylance raises ``ValueError`` for a missing dataset, version or tag and
    ``OSError`` from ``checkout_version``, so code written against pylance catches it either way."""


class DatasetExistsError(LanceError, FileExistsError):
    """``mode="create"`` on a URI that already holds a dataset."""


class CorruptFileError(LanceError):
    """A data file, manifest or deletion file is truncated or does not parse.

    The message always names the file, so the user knows what to restore or delete.
    """

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"{path}: {detail}")


class UnsupportedEncodingError(LanceError):
    """A page uses an encoding no installed plugin can decode (names the encoding and column)."""


class UnsupportedFeatureError(LanceError):
    """The dataset needs a reader/writer feature flag or format version lance_fw does not implement."""


class PluginEncodingNotAllowedError(UnsupportedFeatureError):
    """A write would use a plugin encoding pylance cannot read, without the write option
    ``allow_plugin_encodings=True``; names the column, the plugin and the option. Nothing is written."""


class SchemaError(LanceError, ValueError):
    """Data does not fit the dataset schema, or an Arrow type cannot be stored at this file version."""


class InvalidArgumentError(LanceError, ValueError):
    """A bad option or argument (names the option)."""


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong Python type (a non-string key or value); also a ``TypeError``, as
    pylance raises for those."""


class FieldNotFoundError(SchemaError, OSError):
    """A field path names no field of the schema (pylance raises ``OSError`` from metadata updates)."""


class CommitConflictError(LanceError, OSError):
    """A concurrent writer committed a version this transaction cannot be rebased on. Also an
    ``OSError``, as pylance's ``lance.commit.CommitConflictError`` is."""


class IncompatibleTransactionError(CommitConflictError, OSError):
    """A concurrent commit changed what this transaction changes (the same config or metadata key,
    the schema under a schema/field metadata update); retrying the same call on the new version may
    succeed. Also an ``OSError``: pylance raises ``OSError`` ("Incompatible transaction") there."""


class CommitStuckError(CommitConflictError):
    """The commit handler keeps refusing a version whose manifest never appears: a claim left by a
    writer that crashed between claiming the version and writing its manifest. Retrying cannot help
    until the handler repairs or someone clears the claim; names the handler and the version."""


class StorageError(LanceError, OSError):
    """The storage backend failed, or no backend handles the URI's scheme."""


class PluginConflictError(LanceError):
    """Two plugins claim the same entry-point name, encoding, ``(family, kind)``, URI scheme or codec.

    Raised instead of letting install order pick a winner silently; the message names both plugins
    and their distributions. Resolve with ``LANCE_FW_DISABLE_PLUGINS`` or ``LANCE_FW_OVERRIDES``."""


class PluginLoadError(LanceError):
    """A plugin failed to import, declares an unknown ``lance_*`` hook, or a hook returned a value of
    the wrong type; the message names the plugin (and its distribution when known)."""


class EncoderContractError(LanceError):
    """A column encoder (a plugin) returned a page that does not keep the encoder contract (rows,
    buffers, encoding message); the write fails before anything is committed, naming the plugin."""


class IndexContractError(LanceError):
    """An index plugin returned something outside the index contract (``lance_fw.interfaces``:
    a missing attribute, a non-uint64 or unsorted search result, no files written); the query or
    build fails naming the plugin instead of trusting the answer."""


class InvalidUserInputError(InvalidArgumentError, OSError):
    """An argument pylance 14 rejects as ``OSError("Invalid user input: ...")`` (e.g. casting an
    indexed column): both a ``ValueError`` like every ``InvalidArgumentError`` and the ``OSError``
    code written against pylance catches."""


class ColumnNotFoundError(InvalidArgumentError, KeyError):
    """A column argument names no column of the schema. Also a ``KeyError``, as pylance raises
    from ``create_scalar_index`` (its message is not quoted as a ``KeyError``'s would be)."""

    __str__ = Exception.__str__


class IndexNotFoundError(InvalidArgumentError, KeyError, RuntimeError):
    """No index has the given name. pylance raises ``KeyError`` from ``stats.index_stats`` and
    ``RuntimeError`` from ``drop_index`` / ``prewarm_index``: this is both."""

    __str__ = Exception.__str__


class UnknownIndexTypeError(UnsupportedFeatureError, NotImplementedError):
    """No installed index plugin has the requested ``index_type`` (pylance: ``NotImplementedError``)."""


class IndexColumnTypeError(UnsupportedFeatureError, TypeError):
    """An index type cannot index a column of this type (pylance: ``TypeError``)."""


class InvalidArgumentRangeError(InvalidArgumentError, OverflowError):
    """A number outside what its field holds (a negative count for an unsigned one). Also an
    ``OverflowError``, as pylance's bindings raise converting it."""


class JobClosedError(LanceError):
    """A task of a Spark job that already committed or failed was about to write another data file
    (its result could never be committed, so it stops and removes what it wrote)."""
