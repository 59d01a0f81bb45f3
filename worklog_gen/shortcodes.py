"""Hugo shortcodes in a post, turned into the markdown they stand for.

A post written for Hugo holds shortcodes such as ``{{< figure src="x.png" caption="..." >}}``,
which any other renderer shows as raw text. :func:`to_markdown` writes the common ones as
markdown, for the page only (the entry's text stays as the author wrote it):

* ``figure`` (``src``, ``alt``, ``caption``): the image, then its caption in italics. An image
  that cannot be found keeps its caption (and its alt text), without a broken image;
* ``x`` and ``tweet`` (``user``, ``id``): a link to the post on X;
* ``youtube`` (``id``, or the first argument): a link to the video;
* ``highlight`` (language, then the code up to ``{{< /highlight >}}``): a fenced code block.

:func:`find_problems` reports, as warnings naming the line, a shortcode this module does not
know (it stays visible as text) and a figure whose image does not exist. Shortcodes inside
fenced code blocks are text, not shortcodes (Hugo's own documentation writes them so).
Shortcode syntax: https://gohugo.io/content-management/shortcodes/
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from worklog_gen.model import Diagnostic
from worklog_gen.repair import track_fence

SHORTCODE_RE = re.compile(r"\{\{([<%])\s*(?P<close>/)?\s*(?P<name>[A-Za-z][\w/-]*)(?P<args>[^}]*?)\s*[>%]\}\}")
"""``{{< name args >}}``, ``{{% name args %}}`` and closing ``{{< /name >}}``."""
KNOWN = ("figure", "x", "tweet", "youtube", "highlight")


@dataclass(frozen=True)
class Shortcode:
    """One shortcode of a text: 0-based ``line``, its span in that line, name, arguments."""

    line: int
    start: int
    end: int
    name: str
    closing: bool
    positional: tuple[str, ...]
    named: dict


def shortcodes(text: str) -> Iterator[Shortcode]:
    """The shortcodes of ``text``, outside fenced code blocks, in order."""
    fence = None
    for i, line in enumerate(text.split("\n")):
        fence, marker = track_fence(line, fence)
        if marker or fence is not None:
            continue
        for m in SHORTCODE_RE.finditer(line):
            positional, named = _arguments(m["args"])
            yield Shortcode(i, m.start(), m.end(), m["name"], bool(m["close"]), positional, named)


def _arguments(args: str) -> tuple[tuple[str, ...], dict]:
    """Hugo's arguments: ``key="value"`` pairs, or positional words (quotes allowed)."""
    try:
        words = shlex.split(args)
    except ValueError:  # an unclosed quote: split on spaces
        words = args.split()
    named = {}
    positional = []
    for word in words:
        key, eq, value = word.partition("=")
        if eq and re.fullmatch(r"[A-Za-z][\w-]*", key):
            named[key] = value
        else:
            positional.append(word)
    return tuple(positional), named


def is_url(src: str) -> bool:
    """An absolute URL (``https://...``) rather than a file."""
    return re.match(r"[a-z][a-z0-9+.-]*://", src, re.IGNORECASE) is not None


def find_image(src: str, entry_file: Path) -> Path | None:
    """The file a figure's ``src`` names, looked for beside the entry's file, then, for each
    folder above it (three at most), in it and in its ``static/`` (Hugo's folder of files
    served at the site root, where ``/images/x.png`` lives). ``None`` if not found."""
    rel = src.split("#")[0].split("?")[0].lstrip("/")
    if not rel:
        return None
    folder = entry_file.parent
    candidates = [folder / rel]
    for up in [folder, *list(folder.parents)[:3]]:
        candidates += [up / "static" / rel, up / rel]
    return next((c for c in candidates if c.is_file()), None)


def find_problems(text: str, path: str, first_line: int,
                  image_exists: Callable[[str], bool] = lambda src: True) -> list[Diagnostic]:
    """Warnings for an entry's text whose first line is ``first_line`` (1-based) in ``path``:
    unknown shortcodes (kept as text) and figures whose ``src`` is not found by ``image_exists``."""
    out = []
    for code in shortcodes(text):
        line = first_line + code.line
        if code.name not in KNOWN:
            if not code.closing:
                out.append(Diagnostic(path, line, f"Hugo shortcode {{{{< {code.name} >}}}} is not known here; "
                                      "it stays on the page as text", "warning", "shortcode"))
        elif code.name == "figure" and not image_exists(_figure(code)["src"]):
            out.append(Diagnostic(path, line, f"figure image {_figure(code)['src']!r} not found; "
                                  "the page shows its caption without it", "warning", "missing-image"))
    return out


def _figure(code: Shortcode) -> dict:
    return {"src": code.named.get("src", code.positional[0] if code.positional else ""),
            "alt": code.named.get("alt", ""), "caption": code.named.get("caption", code.named.get("title", ""))}


def to_markdown(text: str, image_url: Callable[[str], str | None] = lambda src: src) -> str:
    """``text`` with its known shortcodes written as markdown (see the module docstring).
    ``image_url(src)`` is the URL a figure's image has on the site, or ``None`` when it was
    not found. Unknown shortcodes, and everything else, stay as they are."""
    lines = text.split("\n")
    codes = list(shortcodes(text))
    by_line: dict[int, list[Shortcode]] = {}
    for code in codes:
        by_line.setdefault(code.line, []).append(code)
    for i, found in sorted(by_line.items()):
        line = lines[i]
        for code in reversed(found):  # right to left: spans stay valid
            new = _replacement(code, image_url)
            if new is not None:
                line = line[: code.start] + new + line[code.end:]
        lines[i] = line
    return "\n".join(lines)


def _replacement(code: Shortcode, image_url: Callable[[str], str | None]) -> str | None:
    if code.name == "figure":
        fig = _figure(code)
        url = image_url(fig["src"])
        caption = f"*{fig['caption']}*" if fig["caption"] else ""
        if url is None:  # the caption (or the alt text) still shows
            return caption or (f"*{fig['alt']}*" if fig["alt"] else "")
        image = f"![{fig['alt'] or fig['caption']}]({url})"
        return f"{image}\n\n{caption}" if caption else image
    if code.name in ("x", "tweet"):
        user = code.named.get("user", code.positional[0] if len(code.positional) > 1 else "")
        post = code.named.get("id", code.positional[-1] if code.positional else "")
        if not post:
            return None
        return f"[Post by @{user} on X](https://x.com/{user or 'i'}/status/{post})" if user else \
            f"[Post on X](https://x.com/i/status/{post})"
    if code.name == "youtube":
        video = code.named.get("id", code.positional[0] if code.positional else "")
        title = code.named.get("title", f"YouTube video {video}")
        return f"[{title}](https://www.youtube.com/watch?v={video})" if video else None
    if code.name == "highlight":
        return "```" if code.closing else "```" + (code.positional[0] if code.positional else "")
    return None
