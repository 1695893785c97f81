"""File format versions: the names users pass and the numbers stored on disk."""

from __future__ import annotations

from lance_fw.errors import InvalidArgumentError

#: ``data_storage_version`` aliases, as pylance 14 resolves them.
_ALIASES = {"stable": "2.2", "legacy": "0.1", "next": "2.3"}
#: The version lance_fw writes when the caller does not choose one.
DEFAULT_VERSION = "2.2"  # what pylance 14 writes by default
SUPPORTED_WRITE = ("2.0", "2.1", "2.2")
#: Every file format version pylance 14 knows; a requested version outside these is a bad argument
#: (pylance: ValueError), one inside them that lance_fw cannot write is an unsupported feature.
KNOWN_VERSIONS = ("0.1", "2.0", "2.1", "2.2", "2.3")

#: The data file versions as (major, minor), the form code compares (``ColumnSpec.version`` ...).
V2_0, V2_1, V2_2 = (2, 0), (2, 1), (2, 2)
#: What the footer of a 2.0 file says instead of 2.0 (the version numbers of 2.0 were renamed late).
V2_0_FOOTER = (0, 3)


def parse_version(name: str | None) -> tuple[int, int]:
    """``"2.0"`` -> ``(2, 0)``; ``None`` -> the default; aliases as in pylance."""
    text = _ALIASES.get(name, name) if name else DEFAULT_VERSION
    try:
        major, minor = (int(p) for p in str(text).split("."))
    except ValueError:
        raise InvalidArgumentError(f"data_storage_version {name!r} is not a version like '2.0'") from None
    return major, minor


def requested_version(name: str | None) -> tuple[int, int]:
    """A ``data_storage_version`` a user asked for: like :func:`parse_version`, but a version no Lance
    release defines (``"9.9"``) is an ``InvalidArgumentError`` (a ``ValueError``, as in pylance)."""
    version = parse_version(name)
    if version_name(version) not in KNOWN_VERSIONS:
        raise InvalidArgumentError(
            f"data_storage_version {name!r}: unknown Lance storage version "
            f"(known: {', '.join(KNOWN_VERSIONS)} and {', '.join(_ALIASES)})"
        )
    return version


def version_name(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def footer_version(version: tuple[int, int]) -> tuple[int, int]:
    """What the 40-byte footer says: 2.0 files say 0.3 (history), later ones their own number."""
    return V2_0_FOOTER if version == V2_0 else version


def from_footer(major: int, minor: int) -> tuple[int, int]:
    return V2_0 if (major, minor) == V2_0_FOOTER else (major, minor)
