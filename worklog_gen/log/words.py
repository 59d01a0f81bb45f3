"""Count the words of an entry's prose.

A word is a whitespace-separated run (as :meth:`str.split` splits) holding at least
one letter or digit (:meth:`str.isalnum`), that does not start with a URL scheme
(``https://``) or ``www.``. So ``-``, ``->``, ``|`` and ``**`` are not words;
``x_ptr``, ``2``, ``GPU's`` and ``café`` are one each.
"""

from __future__ import annotations

import re

# Runs of non-space characters without a letter or digit ("-", "->", "|"), and URLs,
# each after a whitespace character (count_words puts a space in front).
_NO_ALNUM = re.compile(r"\s(?:[^\w\s]|_)+(?=\s|$)")
_URLISH = re.compile(r"\s(?:[A-Za-z][A-Za-z0-9+.\-]*://|www\.)")


def count_words(text: str) -> int:
    """Words in ``text`` (see the module docstring): the runs :meth:`str.split` gives,
    less those without a letter or digit and those that start like a URL."""
    n = len(text.split())
    if not n:
        return 0
    spaced = " " + text
    n -= len(_NO_ALNUM.findall(spaced))
    if "://" in text or "www." in text:
        n -= len(_URLISH.findall(spaced))
    return n
