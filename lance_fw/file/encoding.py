"""The kernel's encoding interfaces: what encoders produce and what decoders receive.

Concrete encodings live in plugins; the kernel finds them through the ``lance_page_decoders``,
``lance_kind_decoders`` and ``lance_select_encoder`` hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2
from google.protobuf.message import Message

from lance_fw.errors import CorruptFileError, UnsupportedEncodingError
from lance_fw.file.version import V2_0, V2_1, V2_2

# The interfaces' old home: re-exported (``X as X``) so plugins importing them from here keep working.
from lance_fw.interfaces import ColumnEncoder as ColumnEncoder
from lance_fw.interfaces import ColumnSpec as ColumnSpec
from lance_fw.interfaces import EncodedPage as EncodedPage
from lance_fw.interfaces import KindDecoder as KindDecoder
from lance_fw.interfaces import PageBuffers as PageBuffers
from lance_fw.interfaces import PageDecoder as PageDecoder
from lance_fw.interfaces import PageInput as PageInput
from lance_fw.interfaces import PageRowDecoder as PageRowDecoder

#: The page-encoding type URL pylance 14 decodes at each data file version: a page with any other
#: type URL makes pylance fail on reading the column (and, at 2.0, every column of the file).
PYLANCE_PAGE_TYPE_URLS = {
    V2_0: "/lance.encodings.ArrayEncoding",
    V2_1: "/lance.encodings21.PageLayout",
    V2_2: "/lance.encodings21.PageLayout",
}


@dataclass(frozen=True)
class EncoderOrigin:
    """The plugin an encoder came from: its name (the entry point) and distribution ("name version",
    what a user installs), or None for code that no registered plugin holds."""

    plugin: str | None
    distribution: str | None

    def describe(self) -> str:
        if self.plugin is None:
            return "no registered plugin"
        return f"plugin {self.plugin!r} ({self.distribution or 'registered at run time'})"


def is_pylance_readable(encoder: Any) -> bool:
    """Whether ``encoder`` declares ``pylance_readable = True`` (exactly True: absent means no)."""
    return getattr(encoder, "pylance_readable", False) is True


def encoder_origin(encoder: Any) -> EncoderOrigin:
    """The registered plugin whose module holds (or is the package of) the encoder's class: the
    longest matching module prefix wins, so errors name what to install, fix or uninstall."""
    from lance_fw.plugin_manager import get_plugin_manager, plugins

    module = type(encoder).__module__
    best, best_len = None, -1
    for name, plugin in get_plugin_manager().list_name_plugin():
        pmod = getattr(plugin, "__name__", None) or type(plugin).__module__
        for prefix in (pmod, pmod.rpartition(".")[0] or pmod):  # the hook module or its package
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    if best is None:
        return EncoderOrigin(None, None)
    dist = next((p["distribution"] for p in plugins() if p["name"] == best), None)
    return EncoderOrigin(best, dist)


def selecting_plugin(spec: ColumnSpec, options: Mapping[str, Any]) -> EncoderOrigin:
    """The plugin whose ``lance_select_encoder`` answers for ``spec``: each implementation is asked
    alone, in pluggy's call order, and the first non-None answer names it. Exact where
    ``encoder_origin`` guesses from modules (a plugin may return another package's encoder class),
    which matters when the answer is recorded in a manifest."""
    from lance_fw.plugin_manager import get_plugin_manager, plugins

    pm = get_plugin_manager()
    given = {"column": spec, "options": options}
    for impl in reversed(pm.hook.lance_select_encoder.get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            continue
        if impl.function(**{k: v for k, v in given.items() if k in impl.argnames}) is not None:
            dist = next((p["distribution"] for p in plugins() if p["name"] == impl.plugin_name), None)
            return EncoderOrigin(impl.plugin_name, dist)
    return EncoderOrigin(None, None)


#: Bytes of an array above which ``validate_decoded`` tests text for ASCII before validating it.
_ASCII_TEST_ABOVE = 64 * 1024
#: the high bit of every byte of a u64: text is ASCII (hence valid UTF-8) when no byte has it
_HIGH_BITS = np.uint64(0x8080808080808080)


def validate_decoded(array: pa.Array, where: str) -> pa.Array:
    """``array`` once it passes Arrow's full validation, else ``CorruptFileError(where, ...)``.

    Decoders check what they parse (sizes, counts, widths, offsets), but a damaged byte can still
    assemble into well-formed yet invalid Arrow (text that is not UTF-8, offsets stepping backwards
    inside a chunk, child lengths that disagree). Such an array must never reach a caller:
    ``to_pylist`` aborts on it and DuckDB crashes. Every page decoder runs this once on what it
    built, before anything indexes into it.

    Full validation is cheap except for UTF-8 (about 1 GB/s). Text whose bytes are all ASCII is
    valid UTF-8, and a bitwise OR over the data buffers answers that at memory speed, so such
    arrays are validated as binary (offsets and lengths only); others get the full UTF-8 check.
    Small arrays (a take of a few rows) skip that test: Arrow checks their few bytes faster than
    the test is set up.
    """
    checked = array
    as_binary = _utf8_as_binary(array.type)
    if (
        as_binary is not None
        and array.get_total_buffer_size() > _ASCII_TEST_ABOVE
        and all(_is_ascii(buf) for buf in _utf8_data(array))
    ):
        try:
            checked = array.view(as_binary)
        except (pa.ArrowException, ValueError):  # a non-nullable child under null parents (path arrays)
            checked = array  # cannot be viewed: pay for the full UTF-8 check instead
    try:
        checked.validate(full=True)
    except (pa.ArrowException, ValueError) as exc:
        raise CorruptFileError(where, f"decoded data is not valid Arrow: {exc}") from None
    return array


def check_decoded(array: Any, where: str, arrow_type: pa.DataType, length: int) -> pa.Array:
    """``array`` once it is what a page decoder must return, else ``CorruptFileError(where, ...)``:
    a ``pyarrow.Array`` of exactly ``length`` rows and exactly ``arrow_type`` (never cast into it),
    passing full validation (``validate_decoded``).

    The reader runs it on every decoded page and every ``decode_rows`` result. A decoder that takes
    rows out of a whole page it decoded runs it first: ``take`` on a page one row short silently
    yields the rows after the ones asked for, and on invalid offsets reads garbage.
    """
    if not isinstance(array, pa.Array):
        raise CorruptFileError(where, f"the decoder returned a {type(array).__name__}, not a pyarrow.Array")
    if len(array) != length:
        raise CorruptFileError(where, f"decoded {len(array)} rows, expected {length}")
    if not array.type.equals(arrow_type):  # never cast a plugin's wrong type into the right one
        raise CorruptFileError(where, f"decoded a {array.type} array for a {arrow_type} column")
    return validate_decoded(array, where)


def _utf8_as_binary(t: pa.DataType) -> pa.DataType | None:
    """``t`` with every utf8 type replaced by the binary type of the same layout (None when ``t``
    holds no utf8, or holds it where this walk does not go, e.g. in a dictionary or a map)."""
    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.large_binary()
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        children = [_utf8_as_binary(f.type) for f in fields]
        if all(i is None for i in children):
            return None
        return pa.struct([f if i is None else f.with_type(i) for f, i in zip(fields, children)])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_map(t):
            return None
        inner = _utf8_as_binary(t.value_type)
        if inner is None:
            return None
        item = t.value_field.with_type(inner)
        if pa.types.is_fixed_size_list(t):
            return pa.list_(item, t.list_size)
        return pa.large_list(item) if pa.types.is_large_list(t) else pa.list_(item)
    return None


def _utf8_data(array: pa.Array) -> Iterator[pa.Buffer | None]:
    """The data buffers of every utf8 array inside ``array`` (whole buffers, not just the
    referenced bytes: ASCII there is sufficient, never necessary)."""
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        yield array.buffers()[2]
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _utf8_data(array.field(i))
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _utf8_data(array.values)


def _is_ascii(buf: pa.Buffer | None) -> bool:
    if buf is None:
        return True
    raw = np.frombuffer(buf, np.uint8)
    head = raw.size - raw.size % 8
    words = raw[:head].view(np.uint64)
    return not (np.bitwise_or.reduce(words) & _HIGH_BITS) and bool((raw[head:] < 0x80).all())


def pack_any(message: Message, type_url: str | None = None) -> any_pb2.Any:
    """Pack a message the way Lance does: type URL with a leading slash and no domain."""
    out = any_pb2.Any()
    out.type_url = type_url or "/" + message.DESCRIPTOR.full_name
    out.value = message.SerializeToString()
    return out


def decode_page(encoding: any_pb2.Any, page: PageInput) -> pa.Array:
    """Find the page decoder for the encoding's type URL and run it."""
    from lance_fw.plugin_manager import failure_note, registry

    decoder = registry.page_decoders.get(encoding.type_url)
    if decoder is None:
        raise UnsupportedEncodingError(
            f"{page.where}: no installed plugin decodes page encoding {encoding.type_url!r} "
            f"(known: {sorted(registry.page_decoders)}); install the plugin that provides it{failure_note()}"
        )
    return decoder(encoding, page)


def row_decoder(encoding: any_pb2.Any) -> Callable[[any_pb2.Any, PageInput, np.ndarray], pa.Array] | None:
    """The ``decode_rows`` of the page decoder for ``encoding`` (``PageRowDecoder``), or None when it
    has none: the reader then decodes the whole page, checks it, and takes the rows from it (a page
    is checked before anything indexes into it, whichever way it was decoded)."""
    from lance_fw.plugin_manager import registry

    return getattr(registry.page_decoders.get(encoding.type_url), "decode_rows", None)


def decode_kind(
    family: str, message: Message, page: PageInput, num_rows: int, arrow_type: pa.DataType
) -> pa.Array:
    """Decode one node of a built-in encoding tree by its oneof kind."""
    from lance_fw.plugin_manager import failure_note, registry

    oneof = message.DESCRIPTOR.oneofs[0].name
    kind = message.WhichOneof(oneof)
    decoder = registry.kind_decoders.get((family, kind))
    if decoder is None:
        raise UnsupportedEncodingError(
            f"{page.where}: no installed plugin decodes {family} kind {kind!r}{failure_note()}"
        )
    return decoder(getattr(message, kind), page, num_rows, arrow_type)


def select_encoder(spec: ColumnSpec, options: Mapping[str, Any]) -> ColumnEncoder:
    from lance_fw.plugin_manager import get_plugin_manager

    encoder = get_plugin_manager().hook.lance_select_encoder(column=spec, options=options)
    if encoder is None:
        raise UnsupportedEncodingError(
            f"no installed plugin encodes field {spec.field.name!r} ({spec.arrow_type}) "
            f"at file version {spec.version[0]}.{spec.version[1]}"
        )
    return encoder
