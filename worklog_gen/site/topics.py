"""Which topics an entry mentions.

A topic (``id``, ``title``, ``aliases`` from the plugin config) is mentioned when
one of its names occurs in the entry's *prose* as a whole word, ignoring case:
"GEMM" and "matmul" both name ``tiled-matmul``. Prose is what a reader sees: text,
link text and inline code, without link destinations, bare URLs, raw HTML or code
blocks, so ``https://x.org/matmul`` mentions nothing.

Plain functions over plain text; the plugin and the export call them.
"""

from __future__ import annotations

import functools
import re
from typing import Protocol, Sequence

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark")
_BARE_URL = re.compile(r"(?:\b[a-z][a-z0-9+.-]*://|\bwww\.)\S+", re.IGNORECASE)
_SEPARATOR = re.compile(r"[\s\-]+")


class Topic(Protocol):
    """What matching needs of a topic; :class:`worklog_gen.config.TopicConfig` has it."""

    id: str
    title: str
    aliases: list[str]


@functools.lru_cache(maxsize=8192)
def prose(markdown: str) -> str:
    """The text a reader sees in ``markdown``, one line per block.

    Keeps paragraph, heading and list text, link text and inline code; drops link
    destinations, autolinks, bare URLs (``https://...``, ``www...``), raw HTML and
    fenced or indented code blocks. Parsed with markdown-it-py (CommonMark), so
    emphasis markers and escapes are gone too. Cached: the plugin asks for the
    same entry's prose for its summary and for its topics.
    """
    lines: list[str] = []
    for token in _MD.parse(markdown):
        if token.type != "inline" or not token.children:
            continue
        parts: list[str] = []
        in_autolink = False
        for child in token.children:
            if child.type == "link_open":
                in_autolink = child.markup == "autolink"
            elif child.type == "link_close":
                in_autolink = False
            elif in_autolink:
                continue
            elif child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
        line = _BARE_URL.sub(" ", "".join(parts)).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


def _names(topic: Topic) -> list[str]:
    names = [topic.id, topic.title, *topic.aliases]
    # Longest first, so that "tiled GEMM" is tried before "GEMM" (it only affects speed:
    # any name that matches is enough).
    return sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)


@functools.lru_cache(maxsize=256)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    # Spaces and hyphens inside a name match each other: "online softmax" finds
    # "online-softmax" and the id "vector-add" finds "vector add".
    alternatives = "|".join(
        r"[\s\-]+".join(re.escape(part) for part in _SEPARATOR.split(name)) for name in names
    )
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def match_topics(text: str, topics: Sequence[Topic]) -> list[str]:
    """Ids of the topics that ``text`` mentions, in the order of ``topics``.

    Args:
        text: markdown (an entry's body) or plain text; URLs in it are ignored
            (see :func:`prose`).
        topics: objects with ``id``, ``title`` and ``aliases``.

    A name matches case-insensitively as a whole word: not inside a longer word
    ("matmuls", "softmaxed" and "log_softmax" do not match), with any run of spaces
    or hyphens standing for the spaces or hyphens in the name.
    """
    words = prose(text)
    return [t.id for t in topics if _pattern(tuple(_names(t))).search(words)]

