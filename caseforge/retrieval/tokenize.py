"""The one tokenizer the lexical retrievers share: lower-cased word tokens minus English stopwords."""
from __future__ import annotations

import re

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his i if in into is it its
    of on or our she so such than that the their them then there these they this to was were which
    while who will with would you your not no can could did do does may might must shall should
    what when where whom why how all any both each few more most other some only own same too very
    s t just over under again further once here about above below up down out off""".split()
)


def tokenize(text: str) -> list[str]:
    return [t for t in TOKEN.findall((text or "").lower()) if t not in STOPWORDS]
