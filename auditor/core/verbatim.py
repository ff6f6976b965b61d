"""What "verbatim" means when a quote is checked against a step's content.

Both sides are put in Unicode NFC and every run of whitespace becomes one space; nothing else
(no case folding, no punctuation changes). It lives on the ground floor because the report
validator, the Auditor Agent's tools and the worlds' LLM judge must all agree on it.
"""

from __future__ import annotations

import re
import unicodedata

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()
