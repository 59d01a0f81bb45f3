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

_ENTITY = re.compile(r"&#x([0-9A-Fa-f]+);")
_NESTED_MO = re.compile(r"<mo><mrow><mo>([^<]*)</mo></mrow></mo>")
_TEXT_ESCAPE = re.compile(r"(<mtext[^>]*>)([^<]*)(</mtext>)")
_UNKNOWN = re.compile(r"<m[io][^>]*>(\\[A-Za-z]+)<")
_MARKUP = {"<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;"}


@dataclass(frozen=True)
class Unconverted:
    """A formula left as TeX: its TeX and latex2mathml's message."""

    tex: str
    error: str


def to_mathml(tex: str, *, display: bool) -> str:
    """One formula (TeX, without delimiters) as a ``<math>`` element: ``display="block"`` for a
    display formula, ``"inline"`` else, its TeX kept as ``<annotation encoding="application/x-tex">``.

    latex2mathml's output is tidied: characters written as themselves rather than as numeric
    references (a page weighs less; ``<``, ``>``, ``&`` and ``"`` stay escaped), no ``xmlns``
    (HTML's parser puts ``<math>`` in the MathML namespace itself), an escape such as ``\\_``
    inside ``\\text{}`` written as its character, and ``\\mathrel{+}``'s ``<mo>`` inside an
    ``<mo>`` (not valid MathML) made one ``<mo>``.

    Raises:
        ValueError: a command latex2mathml does not know (it would write ``\\foo`` as an
            identifier), named.
        Exception: whatever latex2mathml raises for TeX it cannot read (its own types,
            ``NotImplementedError``, ...).
    """
    from latex2mathml.converter import convert

    mode = "block" if display else "inline"
    mathml = convert(tex, display=mode)
    body = mathml[mathml.index(">") + 1: mathml.rindex("</math>")]
    if unknown := _UNKNOWN.search(body):
        raise ValueError(f"unknown command {unknown.group(1)}")
    body = _ENTITY.sub(lambda m: _MARKUP.get(ch := chr(int(m.group(1), 16)), ch), body)
    body = _NESTED_MO.sub(r"<mo>\1</mo>", body)
    body = _TEXT_ESCAPE.sub(lambda m: m.group(1) + re.sub(r"\\([_#%&${} ])", r"\1", m.group(2)) + m.group(3),
                            body)
    if not body.startswith("<mrow>") or not body.endswith("</mrow>"):
        body = f"<mrow>{body}</mrow>"  # <semantics> takes one presentation child
    annotation = html.escape(tex.strip(), quote=False)
    return (f'<math display="{mode}"><semantics>{body}'
            f'<annotation encoding="application/x-tex">{annotation}</annotation></semantics></math>')


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
