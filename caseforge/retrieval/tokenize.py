"""The one tokenizer the lexical retrievers share: lower-cased word tokens minus English stopwords,
optionally reduced to their Snowball stems (PyStemmer, the stemmer bm25s documents)."""
from __future__ import annotations

import re
from functools import lru_cache

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his i if in into is it its
    of on or our she so such than that the their them then there these they this to was were which
    while who will with would you your not no can could did do does may might must shall should
    what when where whom why how all any both each few more most other some only own same too very
    s t just over under again further once here about above below up down out off""".split()
)


STEMMERS = (None, "english")      # None: surface forms; "english": the Snowball English (Porter2) stemmer


@lru_cache(maxsize=None)
def _stemmer(language: str):
    import Stemmer

    return Stemmer.Stemmer(language)


def tokenize(text: str, stemmer: str | None = None) -> list[str]:
    """Word tokens of `text`; with `stemmer` ("english") each is replaced by its Snowball stem."""
    tokens = [t for t in TOKEN.findall((text or "").lower()) if t not in STOPWORDS]
    if stemmer is None or not tokens:
        return tokens
    if stemmer not in STEMMERS:
        raise ValueError(f"unknown stemmer {stemmer!r} (choose from none, {', '.join(s for s in STEMMERS if s)})")
    return _stemmer(stemmer).stemWords(tokens)
