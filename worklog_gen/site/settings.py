"""The MkDocs settings a worklog site needs, merged into the author's own.

The generated pages are written with these markdown extensions: topic pages fold cells in
``??? fold`` blocks holding fenced code (``pymdownx.details`` with ``pymdownx.superfences``),
math is ``pymdownx.arithmatex``'s generic output (``\\(...\\)``, rendered by ``katex.js``), a
chart's image carries its size (``attr_list``), a post has footnotes, results are tables, and a
bare URL in an entry (``read https://… today``) is a link on the page as it is in the reading list
(``pymdownx.magiclink``: the URLs GitHub links, :mod:`worklog_gen.log.markdown_scan`), and a
GitHub task item (``- [x] …``) starts with a checkbox (``pymdownx.tasklist``, each box named by
:mod:`worklog_gen.site.tasklist`), as the Tasks page reads it, and ``~~struck out~~`` is struck
out, as on GitHub (``pymdownx.tilde``, without its subscript: ``~3 ms`` stays text), and so is
``:rocket:`` its emoji (:mod:`worklog_gen.site.emoji`). A site
that lacks one gets it; a site that sets one keeps its own options, ours filling only the options
it does not set (as Material's blog plugin needs its extensions, but says so instead).

The theme's font: Material loads Roboto from Google Fonts unless ``theme.font`` is ``false``.
A site that does not choose a font gets ``false`` (the system fonts), so that no page makes a
request off the site. The theme's features gain :data:`THEME_FEATURES` (code blocks set up as
they come into view).
"""

from __future__ import annotations

import copy

MARKDOWN_EXTENSIONS: dict[str, dict] = {
    "admonition": {},
    "attr_list": {},
    "footnotes": {},
    "md_in_html": {},
    "tables": {},
    "toc": {"permalink": True},
    "pymdownx.highlight": {},
    "pymdownx.superfences": {},
    "pymdownx.details": {},
    "pymdownx.magiclink": {},
    "pymdownx.arithmatex": {"generic": True},
    "pymdownx.tasklist": {"custom_checkbox": True},
    "pymdownx.tilde": {"subscript": False},
    "worklog_gen.site.emoji": {},
    "worklog_gen.site.tasklist": {},
}
"""Extension name -> the options the pages need (the author's options win)."""


def merge_extensions(names: list[str], configs: dict[str, dict]) -> None:
    """Add :data:`MARKDOWN_EXTENSIONS` to a validated MkDocs config's ``markdown_extensions``
    (``names``) and ``mdx_configs`` (``configs``), in place: missing names appended, options
    merged under the author's."""
    for name, options in MARKDOWN_EXTENSIONS.items():
        if name not in names:
            names.append(name)
        if options or name in configs:
            configs[name] = {**copy.deepcopy(options), **configs.get(name, {})}


def with_extensions(extensions: list) -> list:
    """``extensions`` as ``mkdocs.yml`` writes them (names, or one-key ``{name: options}`` maps)
    with :data:`MARKDOWN_EXTENSIONS` merged in (:func:`merge_extensions`), in the same form."""
    names: list[str] = []
    configs: dict[str, dict] = {}
    for item in extensions:
        name, options = (item, None) if isinstance(item, str) else next(iter(item.items()))
        names.append(name)
        if options:
            configs[name] = dict(options)
    merge_extensions(names, configs)
    return [{name: configs[name]} if configs.get(name) else name for name in names]


THEME_FEATURES = ("content.lazy",)
"""Material's features the pages need, added to the author's ``theme.features``.

``content.lazy``: Material sets up each code block (its copy button, whether it scrolls) when the
block comes into view, not every block at once on load. A topic page keeps most of its code in
closed folds, and reading the size of a block inside a closed fold makes the browser lay the
hidden fold out, once per block: 22 forced layouts on the FlashAttention page, most of its
Total Blocking Time in Lighthouse's mobile run. Material's code-block component reads the flag
(its docs do not list it); a theme that does not know it ignores it."""


def merge_features(features: list[str]) -> None:
    """Append the :data:`THEME_FEATURES` that ``features`` (a theme's list) lacks, in place."""
    features.extend(f for f in THEME_FEATURES if f not in features)


def with_theme_defaults(theme: dict | str | None) -> dict:
    """``mkdocs.yml``'s ``theme`` value with ``font: false`` unless the author set a font, and
    :data:`THEME_FEATURES` added to its ``features``."""
    theme = {"name": theme} if isinstance(theme, str) else dict(theme or {})
    theme.setdefault("font", False)
    theme["features"] = list(theme.get("features") or [])
    merge_features(theme["features"])
    return theme
