"""Hugo shortcodes and Jekyll's Liquid in a post, turned into the markdown they stand for.

A post written for Hugo holds shortcodes such as ``{{< figure src="x.png" caption="..." >}}``,
and one written for Jekyll (al-folio, Minimal Mistakes) Liquid such as
``{% include figure.liquid path="assets/img/x.png" %}``, which any other renderer shows as raw
text. :func:`to_markdown` writes the common ones as markdown, for the page only (the entry's text
stays as the author wrote it):

* ``figure`` (``src``, ``alt``, ``caption``), and Jekyll's ``{% include figure.liquid %}`` or
  ``figure.html`` (``path``, ``alt``, ``caption`` or ``title``): the image, then its caption in
  italics. An image that cannot be found keeps its caption (and its alt text), without a broken
  image;
* ``x`` and ``tweet`` (``user``, ``id``): a link to the post on X;
* ``youtube`` (``id``, or the first argument): a link to the video;
* ``highlight`` (language, then the code up to ``{{< /highlight >}}``), and Liquid's
  ``{% highlight cuda linenos %}`` up to ``{% endhighlight %}``: a fenced code block;
* Liquid's ``{% raw %}`` and ``{% endraw %}``: nothing (what lies between stays as written).

Before that, :func:`resolve_urls` writes the Liquid that Jekyll's posts put into their links as
the path it gives (``{{ site.baseurl }}/assets/img/x.png`` and
``{{ '/assets/img/x.png' | relative_url }}`` are ``/assets/img/x.png``), so the parser finds the
file and the site publishes it, as it does a file named plainly.

:func:`find_problems` reports, as warnings naming the line, a shortcode or Liquid tag this module
does not know (it stays visible as text; so does Liquid output such as ``{{ page.title }}``) and a
figure whose image does not exist. Shortcodes and Liquid inside fenced code blocks, code spans,
a highlighted block or a ``raw`` block are text (Hugo's and Jekyll's own documentation write them
so). Syntax: https://gohugo.io/content-management/shortcodes/ and
https://jekyllrb.com/docs/liquid/tags/
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.repair import code_span_ranges, track_fence
from worklog_gen.paths import OutsideFolder, inside

SHORTCODE_RE = re.compile(r"\{\{([<%])\s*(?P<close>/)?\s*(?P<name>[A-Za-z][\w/-]*)(?P<args>[^}]*?)\s*[>%]\}\}")
"""``{{< name args >}}``, ``{{% name args %}}`` and closing ``{{< /name >}}``."""
LIQUID_TAG_RE = re.compile(r"(?<!\{)\{%-?[ \t]*(?P<name>[A-Za-z_][\w]*)(?P<args>(?:[^%]|%(?!\}))*?)[ \t]*-?%\}(?!\})")
"""A Liquid tag, ``{% name args %}`` (``{%- ... -%}`` too), that is not a Hugo ``{{% ... %}}``."""
LIQUID_URL_RE = re.compile(
    r"\{\{-?[ \t]*site\.url[ \t]*-?\}\}\{\{-?[ \t]*site\.baseurl[ \t]*-?\}\}"
    r"|\{\{-?[ \t]*site\.(?:baseurl|url)[ \t]*-?\}\}"
    r"|\{\{-?[ \t]*(?P<q>['\"])(?P<path>[^'\"{}]*)(?P=q)[ \t]*\|[ \t]*(?:relative_url|absolute_url)[ \t]*-?\}\}"
)
"""The Liquid output a Jekyll post writes into a link: the site's address (``{{ site.baseurl }}``,
``{{ site.url }}``, both), or a path through ``relative_url`` or ``absolute_url``."""
LIQUID_OUTPUT_RE = re.compile(r"\{\{-?[ \t]*(?:site|page|post|include|layout|paginator|content)\b[^{}]*\}\}")
"""Other Liquid output of a Jekyll page (``{{ page.title }}``), which stays as text, with a warning."""
KNOWN = ("figure", "x", "tweet", "youtube", "highlight", "raw", "liquid-url",
         "ref", "relref", "post_url", "link")
"""What this module, or :mod:`~worklog_gen.log.internal_links` (the cross-references to another post), reads."""
_VERBATIM = ("highlight", "raw")
"""Blocks whose text is not read for shortcodes or Liquid, up to their closing tag."""


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
    liquid: bool = False
    """Jekyll's Liquid (``{% tag %}``, ``{{ site.baseurl }}``) rather than a Hugo shortcode."""
    text: str = ""
    """What it is written as, for a message."""


def has_markup(text: str) -> bool:
    """Whether ``text`` may hold a shortcode or Liquid (a cheap test before :func:`shortcodes`)."""
    return "{{" in text or "{%" in text


def shortcodes(text: str) -> Iterator[Shortcode]:
    """The shortcodes and Liquid of ``text``, in order: outside fenced code blocks and code spans,
    and inside a highlighted or ``raw`` block only the tag that closes it."""
    fence, verbatim = None, None
    for i, line in enumerate(text.split("\n")):
        fence, marker = track_fence(line, fence)
        if marker or fence is not None or not has_markup(line):
            continue
        spans = code_span_ranges(line)
        found = sorted((code for code in _line_codes(i, line) if not any(a <= code.start < b for a, b in spans)),
                       key=lambda code: code.start)
        for code in found:
            if verbatim is not None and not (code.closing and code.name == verbatim):
                continue
            if code.name in _VERBATIM:
                verbatim = None if code.closing else code.name
            yield code


def _line_codes(i: int, line: str) -> Iterator[Shortcode]:
    """Every shortcode and piece of Liquid in ``line`` (the ``i``-th), wherever it stands."""
    for m in SHORTCODE_RE.finditer(line):
        positional, named = _arguments(m["args"])
        yield Shortcode(i, m.start(), m.end(), m["name"], bool(m["close"]), positional, named, text=m[0])
    if "{%" in line:
        for m in LIQUID_TAG_RE.finditer(line):
            yield _liquid_tag(i, m)
    for m in LIQUID_URL_RE.finditer(line):
        yield Shortcode(i, m.start(), m.end(), "liquid-url", False, (m["path"] or "",), {}, True, m[0])
    for m in LIQUID_OUTPUT_RE.finditer(line):
        if not LIQUID_URL_RE.match(m[0]):
            yield Shortcode(i, m.start(), m.end(), "liquid-output", False, (), {}, True, m[0])


def _liquid_tag(i: int, m: re.Match) -> Shortcode:
    """A Liquid tag as a :class:`Shortcode`: ``highlight``/``endhighlight`` and ``raw``/``endraw``
    as a block and its closing, ``include figure.liquid`` (or ``figure.html``) as a ``figure``
    whose ``src`` is its ``path``; any other keeps its name (``include`` with what it includes)."""
    name, (positional, named) = m["name"], _arguments(m["args"])
    closing = name in ("endhighlight", "endraw")
    base = name[3:] if closing else name
    if name == "include" and positional and positional[0] in ("figure.liquid", "figure.html"):
        base, named = "figure", {**named, "src": named.get("path", ""),
                                 "caption": named.get("caption", named.get("title", ""))}
        positional = ()
    elif name == "include":
        base = f"include {positional[0] if positional else ''}".strip()
    return Shortcode(i, m.start(), m.end(), base, closing, positional, named, True, m[0])


def resolve_urls(text: str) -> str:
    """``text`` with the Liquid of its links written as the path it gives (see the module
    docstring): ``{{ site.baseurl }}/assets/x.png`` is ``/assets/x.png``. Each line keeps its
    place; code, and a highlighted or ``raw`` block, stay as written."""
    if "{{" not in text:
        return text
    lines = text.split("\n")
    for code in reversed([c for c in shortcodes(text) if c.name == "liquid-url"]):
        line = lines[code.line]
        lines[code.line] = line[:code.start] + code.positional[0] + line[code.end:]
    return "\n".join(lines)


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


def find_image(src: str, entry_file: Path, folder: Path, excluded: Callable[[Path], bool] | None = None) -> Image:
    """The file a figure's ``src`` names, looked for beside the entry's file, then, for each
    folder above it up to ``folder`` (the worklog folder; three at most), in it and in its
    ``static/`` (Hugo's folder of files served at the site root, where ``/images/x.png`` lives).
    Only files inside ``folder`` count (:func:`worklog_gen.paths.inside`: ``..`` and symbolic
    links followed): a ``src`` whose ``..`` leads out of it, a link that points out of it, or an
    absolute path naming a file outside it is refused. A file that ``excluded`` (the plugin's
    ``exclude``, :class:`~worklog_gen.log.files.Exclusion`) leaves out is not found."""
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
        if not candidate.is_file() or (excluded is not None and excluded(candidate)):
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
                what = (f"Liquid {code.text[:60]}" if code.liquid else f"Hugo shortcode {{{{< {code.name} >}}}}")
                out.append(Diagnostic(path, line, f"{what} is not known here; it stays on the page as text",
                                      DiagnosticCode.SHORTCODE))
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
    if code.name == "raw":
        return ""
    return None
