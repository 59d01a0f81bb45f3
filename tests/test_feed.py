"""The Atom feed parses back as RFC 4287 requires, with absolute links given a site_url."""

import html
import re
import xml.etree.ElementTree as ET

import pytest

from worklog_gen.site.feed import ATOM_NS, atom_feed
from worklog_gen.site.layout import FEED, Layout

CFG = Layout("worklog")
A = f"{{{ATOM_NS}}}"


@pytest.fixture
def log(make_entry, make_log):
    return make_log([
        make_entry("2025-12-09", "[Making Deep Learning Go Brrrr](https://horace.io/brrr_intro.html) & 1 < 2", 154),
        make_entry("2025-12-10", "Presentation done and did well.", 153),
    ])


def test_feed_parses_back_with_required_elements(log):
    root = ET.fromstring(atom_feed(log, CFG, title="My log", author="Monish"))
    assert root.tag == f"{A}feed"
    for tag in ("id", "title", "updated", "author"):
        assert root.find(A + tag) is not None, tag
    assert root.find(f"{A}updated").text == "2025-12-10T00:00:00Z"
    entries = root.findall(f"{A}entry")
    assert [e.find(f"{A}title").text for e in entries] == ["10 Dec 2025 · T-153", "9 Dec 2025 · T-154"]
    for entry in entries:
        for tag in ("id", "title", "updated", "link", "summary"):
            assert entry.find(A + tag) is not None, tag
    assert entries[1].find(f"{A}summary").text == "Making Deep Learning Go Brrrr & 1 < 2"
    ids = [e.find(f"{A}id").text for e in entries]
    assert len(set(ids)) == 2 and all(i.startswith("urn:uuid:") for i in ids)


def test_links_are_relative_to_the_feed_without_site_url(log):
    root = ET.fromstring(atom_feed(log, CFG, title="t"))
    assert FEED == "feed.xml"
    links = [e.find(f"{A}link").get("href") for e in root.findall(f"{A}entry")]
    assert links == ["worklog/2025-12-10/", "worklog/2025-12-09/"]
    assert root.find(f"{A}link[@rel='self']").get("href") == "feed.xml"


def test_links_and_ids_are_absolute_with_site_url(log):
    root = ET.fromstring(atom_feed(log, CFG, title="t", site_url="https://me.github.io/log"))
    entry = root.find(f"{A}entry")
    assert entry.find(f"{A}link").get("href") == "https://me.github.io/log/worklog/2025-12-10/"
    assert entry.find(f"{A}id").text == "https://me.github.io/log/worklog/2025-12-10/"
    assert root.find(f"{A}link[@rel='self']").get("href") == "https://me.github.io/log/feed.xml"


def test_ids_are_stable_across_builds(log):
    assert atom_feed(log, CFG, title="t") == atom_feed(log, CFG, title="t")


def test_empty_log_is_still_a_valid_feed(make_log):
    root = ET.fromstring(atom_feed(make_log([]), CFG, title="t"))
    assert root.findall(f"{A}entry") == [] and root.find(f"{A}updated").text


HOSTILE = ("Profiled the softmax kernel <img src=x onerror=\"alert(1)\"><script>alert(2)</script>.\n"
           "<a href=\"#\" onclick=\"alert(3)\">ncu report</a>, [the paper](javascript:alert(4)),\n"
           "[a roofline](data:text/html,<script>alert(5)</script>) and "
           "[FlashAttention](https://arxiv.org/abs/2205.14135).\n\n"
           "<base href=\"https://evil.example/\"><form action=\"https://evil.example/\"><button>Go</button></form>\n")


@pytest.mark.parametrize("sanitize", [False, True])
def test_feed_content_is_made_safe_as_the_pages_are(make_entry, make_log, sanitize):
    log = make_log([make_entry("2025-12-11", HOSTILE, 152)])
    root = ET.fromstring(atom_feed(log, CFG, title="t", site_url="https://me.github.io/log", sanitize=sanitize))
    content = root.find(f"{A}entry").find(f"{A}content").text
    assert "javascript:" not in content  # always dropped, as the pages drop it
    assert '<a href="https://arxiv.org/abs/2205.14135">FlashAttention</a>' in content
    unsafe = ["<script", "onerror", "onclick", "<base", "<form", "data:"]
    assert [u for u in unsafe if u in content] == ([] if sanitize else unsafe)


@pytest.mark.parametrize("site_url, home", [(None, "./"), ("https://me.github.io/log", "https://me.github.io/log/")])
def test_a_link_to_the_site_home_is_not_the_feed_itself(make_entry, make_log, site_url, home):
    log = make_log([make_entry("2025-12-09", "Back to [the home page](../index.md) and "
                                             "[the worklog](index.md#timeline).", 154)])
    root = ET.fromstring(atom_feed(log, CFG, title="t", site_url=site_url))
    content = root.find(f"{A}entry/{A}content").text
    base = site_url + "/" if site_url else ""
    assert f'href="{home}"' in content and 'href=""' not in content
    assert f'href="{base}worklog/#timeline"' in content


@pytest.mark.parametrize("sanitize", [False, True])
def test_an_e_mail_address_stays_a_mailto_link_and_the_feed_stays_xml(make_entry, make_log, sanitize):
    """Python-Markdown writes an e-mail link's href as character references (an autolink
    ``<me@example.com>``, or a bare address that ``pymdownx.magiclink`` links): it is a ``mailto:``
    URL, not a path to make relative to the feed (it was, with Python-Markdown's placeholder
    characters in it, and the feed was no XML)."""
    log = make_log([make_entry("2025-12-09", "Questions to me@example.com or <you@example.org>.", 154)])
    feed = atom_feed(log, CFG, title="t", sanitize=sanitize)
    content = ET.fromstring(feed).find(f"{A}entry/{A}content").text
    hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', content)]
    assert hrefs == ["mailto:me@example.com", "mailto:you@example.org"]
