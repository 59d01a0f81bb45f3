"""Math that reads without JavaScript: arithmatex's TeX as MathML, made at build time.

``pymdownx.arithmatex`` (generic mode) writes a formula as its TeX between delimiters,
``<span class="arithmatex">\\(...\\)</span>`` inline and ``<div class="arithmatex">\\[...\\]</div>``
for display. :func:`page_mathml` puts each formula's MathML inside its element, converted by
`latex2mathml <https://pypi.org/project/latex2mathml/>`_, so that the browser draws it with no
script (MathML Core, in Chromium since 109, Firefox and Safari) and a screen reader reads it as
math. The TeX is kept in the MathML as its ``<annotation encoding="application/x-tex">``
(MathML 3, section 5.1 "semantics"), where ``katex.js`` reads it to typeset the formula again
with KaTeX: JavaScript only improves the page.

A formula latex2mathml cannot convert stays as TeX, and its message comes back for a warning
naming the page. Plain functions: :mod:`worklog_gen.plugin` calls them from ``on_page_content``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

ARITHMATEX = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*(?P<open>\\\(|\\\[)(?P<tex>.*?)(?:\\\)|\\\])\s*</(?P=tag)>', re.S)
"""An element of arithmatex's generic output: its tag, its opening delimiter and its TeX
(HTML-escaped, as arithmatex writes it)."""

MATHML_ELEMENTS = frozenset({
    "math", "semantics", "annotation", "menclose", "mfrac", "mi", "mn", "mo", "mover", "mpadded", "mphantom",
    "mroot", "mrow", "mspace", "msqrt", "mstyle", "msub", "msubsup", "msup", "mtable", "mtd", "mtext", "mtr",
    "munder", "munderover",
})  # fmt: skip
"""Elements :func:`to_mathml` writes: the presentation MathML latex2mathml 3.81 writes (MathML Core's,
plus ``menclose``) and the ``<semantics>`` that holds the TeX. A formula that would need any other is
left as TeX."""
MATHML_ATTRIBUTES = frozenset({
    "accent", "columnalign", "columnlines", "columnspacing", "depth", "display", "displaystyle", "encoding",
    "fence", "form", "height", "largeop", "linebreak", "linethickness", "lspace", "mathbackground", "mathcolor",
    "mathsize", "mathvariant", "maxsize", "minsize", "movablelimits", "notation", "rowlines", "rowspacing",
    "rspace", "scriptlevel", "separator", "stretchy", "voffset", "width",
})  # fmt: skip
"""Attributes :func:`to_mathml` keeps, on any of its elements: those that lay out math. Every other
attribute latex2mathml writes is dropped, so that a formula never links, styles or runs anything:
``href`` (``\\href``), ``style`` and ``class`` (``\\style``, ``\\class``), and an event handler."""

_ENTITY = re.compile(r"&#x([0-9A-Fa-f]+);")
_NESTED_MO = re.compile(r"<mo><mrow><mo>([^<]*)</mo></mrow></mo>")
_TEX_ESCAPE = re.compile(r"\\([_#%&${} ])")
_UNKNOWN = re.compile(r"<m[io][^>]*>(\\[A-Za-z]+)<")


@dataclass(frozen=True)
class Unconverted:
    """A formula left as TeX: its TeX and latex2mathml's message."""

    tex: str
    error: str


def to_mathml(tex: str, *, display: bool) -> str:
    """One formula (TeX, without delimiters) as a ``<math>`` element: ``display="block"`` for a
    display formula, ``"inline"`` else, its TeX kept as ``<annotation encoding="application/x-tex">``.

    latex2mathml's element tree is written out here (:func:`_checked`), not by latex2mathml, whose
    string output unescapes its own markup (``\\text{<img onerror=...>}`` would become an element):
    every text is text, ``<``, ``>`` and ``&`` escaped, other characters written as themselves rather
    than as numeric references (a page weighs less); only :data:`MATHML_ELEMENTS` and
    :data:`MATHML_ATTRIBUTES`; no ``xmlns`` (HTML's parser puts ``<math>`` in the MathML namespace
    itself); an escape such as ``\\_`` inside ``\\text{}`` written as its character; and
    ``\\mathrel{+}``'s ``<mo>`` inside an ``<mo>`` (not valid MathML) made one ``<mo>``.

    Raises:
        ValueError: a command latex2mathml does not know (it would write ``\\foo`` as an
            identifier), or an element outside :data:`MATHML_ELEMENTS`, named.
        Exception: whatever latex2mathml raises for TeX it cannot read (its own types,
            ``NotImplementedError``, ...).
    """
    from xml.etree.ElementTree import tostring

    from latex2mathml.converter import convert_to_element

    mode = "block" if display else "inline"
    body = "".join(tostring(_checked(child), encoding="unicode") for child in convert_to_element(tex, display=mode))
    if unknown := _UNKNOWN.search(body):
        raise ValueError(f"unknown command {unknown.group(1)}")
    body = _NESTED_MO.sub(r"<mo>\1</mo>", body)
    if not body.startswith("<mrow>") or not body.endswith("</mrow>"):
        body = f"<mrow>{body}</mrow>"  # <semantics> takes one presentation child
    annotation = html.escape(tex.strip(), quote=False)
    return (f'<math display="{mode}"><semantics>{body}'
            f'<annotation encoding="application/x-tex">{annotation}</annotation></semantics></math>')


def _checked(element):
    """latex2mathml's ``element`` (an ``xml.etree`` element), in place, with its subtree: each
    element in :data:`MATHML_ELEMENTS`, only :data:`MATHML_ATTRIBUTES` kept, and each text and tail
    plain text (latex2mathml's ``&#x3C;`` references made characters, an ``<mtext>``'s TeX escapes
    their characters), for ``tostring`` to escape. Returns ``element``.

    Raises:
        ValueError: an element outside :data:`MATHML_ELEMENTS`.
    """
    for node in element.iter():
        if node.tag not in MATHML_ELEMENTS:
            raise ValueError(f"latex2mathml wrote <{node.tag}>, which is not written into a page")
        for name in [name for name in node.attrib if name not in MATHML_ATTRIBUTES]:
            del node.attrib[name]
        for part in ("text", "tail"):
            if value := getattr(node, part):
                value = _ENTITY.sub(lambda m: chr(int(m.group(1), 16)), value)
                setattr(node, part, _TEX_ESCAPE.sub(r"\1", value) if node.tag == "mtext" and part == "text" else value)
    return element


def page_mathml(page_html: str) -> tuple[str, list[Unconverted]]:
    """Every arithmatex formula of a page's HTML with its MathML inside its element (see the
    module docstring): ``<span class="arithmatex"><math display="inline">...</math></span>``.
    Returns the new HTML and the formulas left as TeX (:class:`Unconverted`), in page order.
    HTML without a formula comes back as it is."""
    if "arithmatex" not in page_html:
        return page_html, []
    failed: list[Unconverted] = []

    def replace(match: re.Match) -> str:
        tex = html.unescape(match.group("tex"))
        try:
            mathml = to_mathml(tex, display=match.group("open") == "\\[")
        except Exception as exc:  # latex2mathml raises several types, none of them documented
            failed.append(Unconverted(tex.strip(), f"{type(exc).__name__}: {exc}"))
            return match.group(0)
        return f'<{match.group("tag")} class="arithmatex">{mathml}</{match.group("tag")}>'

    return ARITHMATEX.sub(replace, page_html), failed
