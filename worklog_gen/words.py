"""Count the words of an entry's prose.

A word is a whitespace-separated run (as :meth:`str.split` splits) holding at least
one letter or digit (:meth:`str.isalnum`), that does not start with a URL scheme
(``https://``) or ``www.``. So ``-``, ``->``, ``|`` and ``**`` are not words;
``x_ptr``, ``2``, ``GPU's`` and ``café`` are one each.

:func:`count_words` works on the UTF-8 bytes, where one ``bytes.translate`` (that
deletes ASCII punctuation) and one ``bytes.count`` count a whole entry at C speed;
only runs that hold a character outside ASCII, and URLs, go through the rule in
Python, one run at a time. Text that is mostly not ASCII goes through the rule at
once (:func:`count_words_reference`).
"""

from __future__ import annotations

import re

# Runs of non-space characters without a letter or digit ("-", "->", "|"), and URLs,
# each after a whitespace character (count_words_reference puts a space in front).
_NO_ALNUM = re.compile(r"\s(?:[^\w\s]|_)+(?=\s|$)")
_URLISH = re.compile(r"\s(?:[A-Za-z][A-Za-z0-9+.\-]*://|www\.)")

# Each byte's class: " " ASCII whitespace (what str.split splits at, \x1c-\x1f
# included), "a" ASCII letter or digit, "p" any other ASCII character, "u" a byte
# of a character outside ASCII.
_CLASS = bytes(
    ord(" ") if b in b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f " else
    ord("a") if chr(b).isalnum() and b < 0x80 else
    ord("p") if b < 0x80 else ord("u")
    for b in range(256)
)  # fmt: skip
_WORDISH = bytes(ord(" ") if _CLASS[b] == ord(" ") else ord("x") for b in range(256))
_ASCII_PUNCTUATION = bytes(b for b in range(256) if _CLASS[b] == ord("p"))
_URL_START = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]*://|www\.")


def count_words_reference(text: str) -> int:
    """Words in ``text`` (see the module docstring), by two regular expressions over
    the text: the definition :func:`count_words` is tested against."""
    n = len(text.split())
    if not n:
        return 0
    spaced = " " + text
    n -= len(_NO_ALNUM.findall(spaced))
    if "://" in text or "www." in text:
        n -= len(_URLISH.findall(spaced))
    return n


def count_words(text: str) -> int:
    """Words in ``text`` (see the module docstring); equal to :func:`count_words_reference`."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > len(text) + len(text) // 8:
        return count_words_reference(text)  # mostly outside ASCII: no gain in bytes
    # Runs between whitespace with a letter, a digit or a character outside ASCII: with
    # ASCII punctuation deleted, each starts where a space is followed by a byte left.
    n = (b" " + data).translate(_WORDISH, _ASCII_PUNCTUATION).count(b" x")
    if not n or (data.isascii() and b"://" not in data and b"www." not in data):
        return n
    cls = (b" " + data + b" ").translate(_CLASS)  # cls[i + 1] is the class of data[i]
    # A run holding a character outside ASCII may hold Unicode whitespace, letters
    # or digits: count it by the rule itself, in place of the 1 counted above.
    exact: set[int] = set()  # cls offsets of those runs' starts
    p = cls.find(b"u")
    while p != -1:
        start, end = cls.rfind(b" ", 0, p) + 1, cls.find(b" ", p)
        n += count_words_reference(data[start - 1 : end - 1].decode("utf-8", "surrogatepass")) - 1
        exact.add(start)
        p = cls.find(b"u", end)
    for needle in (b"://", b"www."):
        p = data.find(needle)
        while p != -1:
            start = cls.rfind(b" ", 0, p + 1) + 1
            if start not in exact and _URL_START.match(data, start - 1):
                n -= 1
                exact.add(start)  # one URL may hold both needles
            p = data.find(needle, p + 1)
    return n
