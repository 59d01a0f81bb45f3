"""Math without JavaScript (:mod:`worklog_gen.site.math`): arithmatex's TeX written as MathML."""

from __future__ import annotations

import re

from worklog_gen.site.math import page_mathml, to_mathml


def test_an_inline_formula_gets_its_mathml_and_keeps_its_tex():
    page = '<p>Then <span class="arithmatex">\\(dV \\mathrel{+}= P^\\top dO\\)</span>.</p>'
    out, failed = page_mathml(page)
    assert not failed
    assert "\\(" not in out
    math = re.search(r'<span class="arithmatex">(<math display="inline">.*</math>)</span>', out).group(1)
    assert '<annotation encoding="application/x-tex">dV \\mathrel{+}= P^\\top dO</annotation>' in math
    assert "<msup><mi>P</mi><mo>⊤</mo></msup>" in math  # characters as themselves, not &#x022A4;
    assert "<mo><mrow>" not in math  # \mathrel{+}: one <mo>, not an <mo> inside an <mo>
    assert "xmlns" not in math


def test_a_display_formula_is_a_block_and_markup_in_tex_stays_escaped():
    page = '<div class="arithmatex">\\[\na &lt; b \\quad \\text{BLOCK\\_M}\n\\]</div>'
    out, failed = page_mathml(page)
    assert not failed
    assert out.startswith('<div class="arithmatex"><math display="block"><semantics><mrow>')
    assert "<mo>&lt;</mo>" in out and "<mtext>BLOCK_M</mtext>" in out
    assert "a &lt; b \\quad \\text{BLOCK\\_M}</annotation>" in out


def test_a_formula_that_cannot_be_converted_stays_tex_and_is_reported(monkeypatch):
    import latex2mathml.converter

    def refuse(tex, **kwargs):
        raise NotImplementedError("\\unknowncommand")

    monkeypatch.setattr(latex2mathml.converter, "convert_to_element", refuse)
    page = '<p><span class="arithmatex">\\(\\unknowncommand x\\)</span></p>'
    out, failed = page_mathml(page)
    assert out == page
    assert [(f.tex, f.error) for f in failed] == [("\\unknowncommand x", "NotImplementedError: \\unknowncommand")]


def test_html_without_math_is_untouched():
    page = "<p>A price of $5 and $6 is not math.</p>"
    assert page_mathml(page) == (page, [])
    assert to_mathml("x", display=False).startswith('<math display="inline"><semantics><mrow>')


def test_a_command_latex2mathml_does_not_know_is_reported_not_drawn_as_a_name():
    out, failed = page_mathml('<span class="arithmatex">\\(\\foo x\\)</span>')
    assert "<math" not in out and [f.error for f in failed] == ["ValueError: unknown command \\foo"]


def test_text_in_a_formula_is_text_and_no_link_or_handler_is_written():
    page = ('<p>The tile loop <span class="arithmatex">\\(\\text{&lt;img/src/onerror=alert(1)&gt;} '
            '\\times \\text{BLOCK\\_M}\\)</span></p>\n'
            '<div class="arithmatex">\\[\\href{javascript:alert(3)}{\\mathrm{TFLOP/s}} = '
            '\\style{background:url(x)}{\\class{roof}{I}} \\cdot \\text{GB/s}\\]</div>')
    out, failed = page_mathml(page)
    assert not failed
    assert "<img" not in out and "&lt;img/src/onerror=alert(1)&gt;</mtext>" in out  # shown as text, not parsed
    tags = re.findall(r"<(\w+)((?:\s[^>]*)?)>", out)
    attributes = {name for _, attrs in tags for name in re.findall(r"([\w:-]+)=", attrs)}
    assert not attributes & {"href", "style", "onerror"}, attributes
    assert {tag for tag, _ in tags} <= {"p", "span", "div", "math", "semantics", "annotation", "mrow", "mi", "mo",
                                        "mn", "mtext"}
    assert "javascript:alert(3)" in re.search(r"<annotation[^>]*>(.*?)</annotation>", out.split("<div")[1]).group(1)
