"""Python-Markdown extension ``worklog_gen.site.emoji``: GitHub's emoji shortcodes as the emoji.

A log kept on GitHub writes ``:white_check_mark:`` and ``:rocket:``, which GitHub shows as ✅ and
🚀 and Python-Markdown as text. This extension runs ``pymdownx.emoji`` with GitHub's own index
(``gemoji``) and the ``to_alt`` generator, which writes the Unicode character: no image, no
request off the site, and a name the options of ``mkdocs.yml`` never need (``pymdownx.emoji``'s
own options are Python functions, ``!!python/name:`` tags, which an engine without plugins cannot
read). A site that configures ``pymdownx.emoji`` itself (Material's Twemoji icons) keeps its own:
this extension then adds nothing. A shortcode in code, or of no emoji (``12:30:45``), is text.
"""

from __future__ import annotations

import functools

from markdown import Extension


class GitHubEmojiExtension(Extension):
    """``pymdownx.emoji`` with GitHub's index and Unicode output, unless the page's Markdown
    already has an emoji pattern (the author's ``pymdownx.emoji``, listed before this one)."""

    def extendMarkdown(self, md) -> None:  # noqa: N802 - Python-Markdown's name
        if "emoji" in md.inlinePatterns:
            return
        from pymdownx import emoji

        emoji.EmojiExtension(emoji_index=_gemoji, emoji_generator=emoji.to_alt).extendMarkdown(md)


def _gemoji(options: dict, md) -> dict:
    """``pymdownx.emoji.gemoji``'s index, built once (:func:`_index`) and only read: it deep-copies
    its tables for each Markdown instance, and MkDocs makes one a page, 5.3 ms each (a build of
    10,000 days took 126.5 s with it, 72.5 s without; ``benchmarks/bench_site_scale.py``)."""
    return _index()


@functools.cache
def _index() -> dict:
    from pymdownx import emoji

    return emoji.gemoji({}, None)


def makeExtension(**kwargs) -> GitHubEmojiExtension:  # noqa: N802 - the name Python-Markdown looks up
    """The extension, as Python-Markdown loads it by the module's name."""
    return GitHubEmojiExtension(**kwargs)
