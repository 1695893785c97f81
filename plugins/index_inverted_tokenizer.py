"""The text analyzer of pylance 14's full-text indices, as far as lance_fw reproduces it exactly.

Why exactness matters: a query is answered by looking its tokens up in the index, so a query must
be cut into tokens exactly as the indexed text was, or words silently fail to match. pylance's
pipeline (tokenizer params of the index) is: base tokenizer -> drop tokens of ``max_token_length``
bytes or more -> lower case -> Snowball English stemmer -> stop words -> ASCII folding.

What lance_fw reproduces: the ``simple`` (split on every character that is not alphanumeric),
``whitespace`` and ``raw`` base tokenizers, lower casing, the English stop words (the list below,
observed from indices pylance 14 built: it is NLTK's English list less ``no``/``nor``/``not`` and
the contractions' fragments) and the English stemmer through the pure-Python ``snowballstemmer``
package (the same Snowball "english" algorithm pylance's Rust stemmer compiles). Text that is not
ASCII is refused: Unicode's alphanumeric classes and pylance's ASCII folding table differ in
details from Python's, and a token built differently would be a silently wrong answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from lance_fw.errors import UnsupportedFeatureError

#: English stop words pylance 14 drops (after stemming) when ``remove_stop_words`` is on.
ENGLISH_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me
    more most my myself now of off on once only or other our ours ourselves out over own re same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will
    with you your yours yourself yourselves""".split()
)
#: pylance's default ``max_token_length``: tokens this long (in UTF-8 bytes) or longer are dropped.
DEFAULT_MAX_TOKEN_LENGTH = 40
_SIMPLE = re.compile(r"[A-Za-z0-9]+")
#: distinct words whose stems an analyzer remembers
_STEM_CACHE_WORDS = 1 << 20
_WHITESPACE = re.compile(r"[^ \t\n\x0b\x0c\r]+")
_BASE_TOKENIZERS = ("simple", "whitespace", "raw")
_LANGUAGE = "English"


def _stemmer() -> Callable[[str], str]:
    try:
        import snowballstemmer
    except ImportError as exc:  # an optional dependency: refuse stemmed indices without it
        raise UnsupportedFeatureError(
            "this full-text index stems its tokens (stem=True): install the 'snowballstemmer' "
            "package to search it with lance_fw"
        ) from exc
    stem: Callable[[str], str] = snowballstemmer.stemmer("english").stemWord
    return stem


class Analyzer:
    """Turns text into the tokens an index with tokenizer ``params`` (pylance's ``params`` JSON of
    ``metadata.lance``, or ``describe_indices`` details) holds.

    Raises (at construction): ``UnsupportedFeatureError`` naming the parameter lance_fw does not
    reproduce (a base tokenizer, a language, custom stop words).
    """

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.base = str(params.get("base_tokenizer") or "simple")
        if self.base not in _BASE_TOKENIZERS:
            raise UnsupportedFeatureError(
                f"full-text index base_tokenizer {self.base!r} is not supported by lance_fw "
                f"(supported: {', '.join(_BASE_TOKENIZERS)})"
            )
        if params.get("lance_tokenizer") not in (None, "text"):
            raise UnsupportedFeatureError(
                f"full-text index lance_tokenizer {params.get('lance_tokenizer')!r} is not supported"
            )
        limit = params.get("max_token_length", DEFAULT_MAX_TOKEN_LENGTH)
        self.max_length: int | None = None if limit is None else int(limit)
        self.lower = bool(params.get("lower_case", True))
        self.stop = bool(params.get("remove_stop_words", True))
        stem = bool(params.get("stem", True))
        if (stem or self.stop) and params.get("language", _LANGUAGE) != _LANGUAGE:
            raise UnsupportedFeatureError(
                f"full-text index language {params.get('language')!r}: lance_fw stems and removes "
                "stop words in English only"
            )
        if params.get("custom_stop_words"):
            raise UnsupportedFeatureError("full-text index custom_stop_words are not supported by lance_fw")
        if stem and not self.lower:
            raise UnsupportedFeatureError(
                "full-text index with stem=True and lower_case=False is not supported by lance_fw"
            )
        self.stem: Callable[[str], str] | None = _stemmer() if stem else None
        #: word -> stem: stemming in Python is the cost of indexing, and words repeat
        self._stems: dict[str, str] = {}

    def _stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            assert self.stem is not None
            stem = self.stem(word)
            if len(self._stems) < _STEM_CACHE_WORDS:
                self._stems[word] = stem
        return stem

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``, in order (repeats kept: their count is a term frequency).

        Raises: ``UnsupportedFeatureError`` when the text is not ASCII.
        """
        return [token for token, _ in self.positioned(text)]

    def positioned(self, text: str) -> list[tuple[str, int]]:
        """``tokens`` with their positions: the place of each word in the base tokenizer's output,
        so dropped words (stop words, long words) leave gaps, as pylance's phrase matching sees."""
        if not text.isascii():
            raise UnsupportedFeatureError(
                "full-text search of non-ASCII text is not supported by lance_fw (pylance's Unicode "
                "word splitting and ASCII folding are not reproduced)"
            )
        if self.base == "simple":
            words = _SIMPLE.findall(text)
        elif self.base == "whitespace":
            words = _WHITESPACE.findall(text)
        else:
            words = [text]
        out = list(zip(words, range(len(words)), strict=True))
        if self.max_length is not None:
            out = [(w, i) for w, i in out if len(w) < self.max_length]
        if self.lower:
            out = [(w.lower(), i) for w, i in out]
        if self.stem is not None:
            out = [(self._stem(w), i) for w, i in out]
        if self.stop:
            out = [(w, i) for w, i in out if w not in ENGLISH_STOP_WORDS]
        return out
