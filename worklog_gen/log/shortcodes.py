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

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.repair import track_fence
from worklog_gen.paths import OutsideFolder, inside

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


@dataclass(frozen=True)
class Image:
    """Where a figure's ``src`` leads: the file (inside the worklog folder), or why it was
    refused (it leads outside), or neither (not found)."""

    path: Path | None = None
    refused: str = ""


def find_image(src: str, entry_file: Path, folder: Path) -> Image:
    """The file a figure's ``src`` names, looked for beside the entry's file, then, for each
    folder above it up to ``folder`` (the worklog folder; three at most), in it and in its
    ``static/`` (Hugo's folder of files served at the site root, where ``/images/x.png`` lives).
    Only files inside ``folder`` count (:func:`worklog_gen.paths.inside`: ``..`` and symbolic
    links followed): a ``src`` whose ``..`` leads out of it, a link that points out of it, or an
    absolute path naming a file outside it is refused."""
    rel = src.split("#")[0].split("?")[0]
    name = rel.lstrip("/")
    if not name:
        return Image()
    here, folder = entry_file.absolute().parent, folder.absolute()
    try:
        inside(here / name, folder)
    except OutsideFolder as exc:
        if ".." in Path(name).parts:
            return Image(refused=str(exc))
    ups = [up for up in [here, *list(here.parents)[:3]] if up == folder or up.is_relative_to(folder)]
    candidates = [here / name] + [c for up in ups for c in (up / "static" / name, up / name)]
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            return Image(inside(candidate, folder))
        except OutsideFolder as exc:  # a symbolic link that points out of the folder
            return Image(refused=str(exc))
    if Path(rel).is_absolute() and Path(rel).exists():
        return Image(refused=f"{rel} names a file outside {folder}")
    return Image()


def find_problems(text: str, path: str, first_line: int,
                  image: Callable[[str], Image] = lambda src: Image(Path(src))) -> list[Diagnostic]:
    """Warnings for an entry's text whose first line is ``first_line`` (1-based) in ``path``:
    unknown shortcodes (kept as text), figures whose ``src`` ``image`` does not find, and figures
    whose ``src`` leads outside the worklog folder (refused)."""
    out = []
    for code in shortcodes(text):
        line = first_line + code.line
        if code.name not in KNOWN:
            if not code.closing:
                out.append(Diagnostic(path, line, f"Hugo shortcode {{{{< {code.name} >}}}} is not known here; "
                                      "it stays on the page as text", DiagnosticCode.SHORTCODE))
        elif code.name == "figure" and not is_url(src := _figure(code)["src"]):
            found = image(src)
            if found.refused:
                out.append(Diagnostic(path, line, f"figure image {src!r} refused: {found.refused}; the page shows "
                                      "its caption without it", DiagnosticCode.UNSAFE_PATH))
            elif found.path is None:
                out.append(Diagnostic(path, line, f"figure image {src!r} not found; "
                                      "the page shows its caption without it", DiagnosticCode.MISSING_IMAGE))
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
