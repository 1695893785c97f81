from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BTreeIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BitmapIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LabelListIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NGramIndexDetails(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ZoneMapIndexDetails(_message.Message):
    __slots__ = ("rows_per_zone", "use_seeds", "has_null_bitmap")
    ROWS_PER_ZONE_FIELD_NUMBER: _ClassVar[int]
    USE_SEEDS_FIELD_NUMBER: _ClassVar[int]
    HAS_NULL_BITMAP_FIELD_NUMBER: _ClassVar[int]
    rows_per_zone: int
    use_seeds: bool
    has_null_bitmap: bool
    def __init__(self, rows_per_zone: _Optional[int] = ..., use_seeds: _Optional[bool] = ..., has_null_bitmap: _Optional[bool] = ...) -> None: ...

class InvertedIndexDetails(_message.Message):
    __slots__ = ("base_tokenizer", "language", "with_position", "max_token_length", "lower_case", "stem", "remove_stop_words", "ascii_folding", "min_ngram_length", "max_ngram_length", "prefix_only", "block_size", "code_config", "document_granularity", "posting_format_version")
    class DocumentGranularity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ROW: _ClassVar[InvertedIndexDetails.DocumentGranularity]
        LIST_ELEMENT: _ClassVar[InvertedIndexDetails.DocumentGranularity]
    ROW: InvertedIndexDetails.DocumentGranularity
    LIST_ELEMENT: InvertedIndexDetails.DocumentGranularity
    class CodeTokenizerConfig(_message.Message):
        __slots__ = ("split_identifiers", "split_on_numerics", "preserve_original", "index_operators")
        SPLIT_IDENTIFIERS_FIELD_NUMBER: _ClassVar[int]
        SPLIT_ON_NUMERICS_FIELD_NUMBER: _ClassVar[int]
        PRESERVE_ORIGINAL_FIELD_NUMBER: _ClassVar[int]
        INDEX_OPERATORS_FIELD_NUMBER: _ClassVar[int]
        split_identifiers: bool
        split_on_numerics: bool
        preserve_original: bool
        index_operators: bool
        def __init__(self, split_identifiers: _Optional[bool] = ..., split_on_numerics: _Optional[bool] = ..., preserve_original: _Optional[bool] = ..., index_operators: _Optional[bool] = ...) -> None: ...
    BASE_TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    WITH_POSITION_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKEN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    LOWER_CASE_FIELD_NUMBER: _ClassVar[int]
    STEM_FIELD_NUMBER: _ClassVar[int]
    REMOVE_STOP_WORDS_FIELD_NUMBER: _ClassVar[int]
    ASCII_FOLDING_FIELD_NUMBER: _ClassVar[int]
    MIN_NGRAM_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_NGRAM_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PREFIX_ONLY_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    CODE_CONFIG_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_GRANULARITY_FIELD_NUMBER: _ClassVar[int]
    POSTING_FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    base_tokenizer: str
    language: str
    with_position: bool
    max_token_length: int
    lower_case: bool
    stem: bool
    remove_stop_words: bool
    ascii_folding: bool
    min_ngram_length: int
    max_ngram_length: int
    prefix_only: bool
    block_size: int
    code_config: InvertedIndexDetails.CodeTokenizerConfig
    document_granularity: InvertedIndexDetails.DocumentGranularity
    posting_format_version: int
    def __init__(self, base_tokenizer: _Optional[str] = ..., language: _Optional[str] = ..., with_position: _Optional[bool] = ..., max_token_length: _Optional[int] = ..., lower_case: _Optional[bool] = ..., stem: _Optional[bool] = ..., remove_stop_words: _Optional[bool] = ..., ascii_folding: _Optional[bool] = ..., min_ngram_length: _Optional[int] = ..., max_ngram_length: _Optional[int] = ..., prefix_only: _Optional[bool] = ..., block_size: _Optional[int] = ..., code_config: _Optional[_Union[InvertedIndexDetails.CodeTokenizerConfig, _Mapping]] = ..., document_granularity: _Optional[_Union[InvertedIndexDetails.DocumentGranularity, str]] = ..., posting_format_version: _Optional[int] = ...) -> None: ...
