from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

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
    __slots__ = ()
    def __init__(self) -> None: ...

class InvertedIndexDetails(_message.Message):
    __slots__ = ("base_tokenizer", "language", "with_position", "max_token_length", "lower_case", "stem", "remove_stop_words", "ascii_folding", "min_ngram_length", "max_ngram_length", "prefix_only")
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
    def __init__(self, base_tokenizer: _Optional[str] = ..., language: _Optional[str] = ..., with_position: _Optional[bool] = ..., max_token_length: _Optional[int] = ..., lower_case: _Optional[bool] = ..., stem: _Optional[bool] = ..., remove_stop_words: _Optional[bool] = ..., ascii_folding: _Optional[bool] = ..., min_ngram_length: _Optional[int] = ..., max_ngram_length: _Optional[int] = ..., prefix_only: _Optional[bool] = ...) -> None: ...
