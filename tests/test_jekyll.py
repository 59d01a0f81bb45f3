"""Posts written for Jekyll (al-folio's Liquid, space-separated tags) and for Material's blog
(``date: {created: ...}``, the title as the first heading): read, and built as their authors
would see them."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from bs4 import BeautifulSoup

from worklog_gen.log.parse import load, parse
from worklog_gen.log.shortcodes import find_problems, resolve_urls, to_markdown
from worklog_gen.site.pages import SiteContext, day_page

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

AL_FOLIO_POST = """\
---
layout: post
title: "Warp shuffles, or how to reduce without shared memory"
date: 2025-01-05 18:30:00-0800
description: a tree of __shfl_down_sync
tags: cuda reduction
categories: learning-log
giscus_comments: true
---

A warp can sum 32 floats without touching shared memory.

{% highlight cuda linenos %}
for (int offset = 16; offset > 0; offset /= 2)
    val += __shfl_down_sync(0xffffffff, val, offset);  // {{ not Liquid }}
{% endhighlight %}

{% include figure.liquid loading="eager" path="assets/img/tree.png" class="img-fluid" caption="Five steps, 32 lanes." %}

The tree again: ![the tree]({{ site.baseurl }}/assets/img/tree.png), and the guide's
[warp shuffle functions](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#warp-shuffle-functions).
Its plot: [timings]({{ '/assets/img/tree.png' | relative_url }}).

{% raw %}
In a post about Jekyll, {{ page.title }} and {% include x.html %} are shown as written.
{% endraw %}
Liquid in a code span stays: `{{ site.baseurl }}`.
"""

MATERIAL_POST = """\
---
date:
  created: 2025-02-01
  updated: 2025-02-03
categories:
  - Hopper
---

# Tensor cores on Hopper

wgmma reads its B operand from shared memory.

<!-- more -->

The rest: `wgmma.mma_async` runs beside the loads.
"""


def test_liquid_links_resolve_to_the_path_they_give_and_code_stays_as_written():
    text = ("![a]({{ site.baseurl }}/img/a.png) [b]({{site.url}}{{site.baseurl}}/b.pdf) "
            "[c]({{ \"/c.png\" | absolute_url }})\n`{{ site.baseurl }}`\n```\n{{ site.baseurl }}\n```\n")
    assert resolve_urls(text) == ("![a](/img/a.png) [b](/b.pdf) [c](/c.png)\n`{{ site.baseurl }}`\n```\n"
                                  "{{ site.baseurl }}\n```\n")


def test_liquid_tags_become_markdown_and_a_raw_block_stays_as_written():
    out = to_markdown(resolve_urls(AL_FOLIO_POST.split("---\n", 2)[2]), lambda src: f"published/{src}")
    assert "```cuda\nfor (int offset" in out and "// {{ not Liquid }}\n```\n" in out
    assert "![Five steps, 32 lanes.](published/assets/img/tree.png)\n\n*Five steps, 32 lanes.*" in out
    assert "In a post about Jekyll, {{ page.title }} and {% include x.html %} are shown as written." in out
    assert "{% raw %}" not in out and "{% endraw %}" not in out and "{% highlight" not in out


def test_unknown_liquid_is_a_warning_naming_its_line_and_stays():
    text = "intro\n{% twitter https://x.com/a/status/1 %}\nby {{ page.author }}\n{% include figure.liquid path=\"gone.png\" %}\n"
    found = [(d.line, d.code, d.message) for d in find_problems(text, "p.md", 10, lambda src: load_image(None))]
    assert found == [
        (11, "shortcode", "Liquid {% twitter https://x.com/a/status/1 %} is not known here; it stays on the page as text"),
        (12, "shortcode", "Liquid {{ page.author }} is not known here; it stays on the page as text"),
        (13, "missing-image", "figure image 'gone.png' not found; the page shows its caption without it"),
    ]
    assert to_markdown(text, lambda src: None).split("\n")[1:3] == ["{% twitter https://x.com/a/status/1 %}",
                                                                     "by {{ page.author }}"]


def load_image(path):
    from worklog_gen.log.shortcodes import Image

    return Image(path)


def test_a_jekyll_post_reads_its_tags_as_jekyll_does_and_finds_its_liquid_linked_files(tmp_path):
    (tmp_path / "_posts").mkdir()
    (tmp_path / "assets" / "img").mkdir(parents=True)
    (tmp_path / "assets" / "img" / "tree.png").write_bytes(PNG)
    (tmp_path / "_posts" / "2025-01-05-warp-shuffles.md").write_text(AL_FOLIO_POST, encoding="utf-8")
    log = load(tmp_path)
    (post,) = log.entries
    assert (post.shape, post.title, post.date) == ("post", "Warp shuffles, or how to reduce without shared memory",
                                                  dt.date(2025, 1, 5))
    assert post.tags == ["cuda", "reduction", "learning-log"]
    assert [i.url for i in post.images] == ["/assets/img/tree.png"]
    assert "/assets/img/tree.png" in [link.url for link in post.links]
    assert log.diagnostics == []
    assert log.reassemble(str(tmp_path / "_posts" / "2025-01-05-warp-shuffles.md")) == AL_FOLIO_POST.rstrip("\n") + "\n"


@pytest.mark.parametrize("value, tags", [("cuda, warp shuffles", ["cuda", "warp shuffles"]), ("cuda", ["cuda"]),
                                         ("[cuda, triton]", ["cuda", "triton"])])
def test_a_post_s_tags_may_be_a_list_or_a_string_of_several(value, tags):
    (post,) = parse(f"---\ntitle: T\ndate: 2025-01-05\ntags: {value}\n---\nx\n", "p.md").entries
    assert post.tags == tags


def test_a_material_blog_post_is_dated_by_created_and_titled_by_its_heading():
    log = parse(MATERIAL_POST, "blog/posts/tensor-cores.md")
    (post,) = log.entries
    assert (post.shape, post.title, post.date, post.tags) == ("post", "Tensor cores on Hopper", dt.date(2025, 2, 1),
                                                             ["Hopper"])
    assert log.diagnostics == [] and post.body.startswith("\n# Tensor cores on Hopper\n")  # the text as written
    page = day_page(log, 0, SiteContext())
    assert page.count("Tensor cores on Hopper") == 2  # the page's title, in its front matter and its heading
    assert "\nwgmma reads its B operand" in page


def test_a_date_mapping_without_created_is_an_error_naming_its_line():
    log = parse("---\ntitle: T\ndate:\n  updated: 2025-02-03\n---\nx\n", "p.md")
    (bad,) = [d for d in log.diagnostics if d.code == "invalid-date"]
    assert (bad.line, bad.message) == (3, "front matter date is a mapping without `created` (Material's blog writes "
                                          "`date: {created: 2025-02-01}`), not a date")


def test_jekyll_and_material_posts_build_strict_with_their_figure_published(build_site):
    site = build_site(None, files={"worklog/_posts/2025-01-05-warp-shuffles.md": AL_FOLIO_POST.encode(),
                                   "worklog/_posts/2025-02-01-tensor-cores.md": MATERIAL_POST.encode(),
                                   "worklog/assets/img/tree.png": PNG})
    folder = site / "worklog" / "2025-01-05-warp-shuffles-or-how-to-reduce-without-shared"
    article = BeautifulSoup((folder / "index.html").read_text(encoding="utf-8"), "html.parser").find("article")
    images = article.find_all("img")
    assert len(images) == 2 and all((folder / img["src"]).resolve().read_bytes() == PNG for img in images)
    assert "__shfl_down_sync(0xffffffff, val, offset)" in article.find("pre").get_text()
    text = article.get_text()
    assert "{%" not in text.replace("{% include x.html %}", "") and "site.baseurl }}/" not in text
    assert "Five steps, 32 lanes." in text and "{{ page.title }}" in text
    material = (site / "worklog" / "2025-02-01-tensor-cores-on-hopper" / "index.html").read_text(encoding="utf-8")
    assert BeautifulSoup(material, "html.parser").find("article").get_text().count("Tensor cores on Hopper") == 1


HUGO_TOML_POST = """\
+++
title = "Warp shuffles"
date = 2025-01-05T18:30:00+01:00
tags = ["cuda", "reduction"]
categories = ["learning-log"]
draft = false
+++

A warp can sum 32 floats without shared memory.
"""


def test_a_hugo_post_may_give_its_front_matter_in_toml():
    """Hugo's own default: ``+++`` around TOML (https://gohugo.io/content-management/front-matter/)."""
    log = parse(HUGO_TOML_POST, "content/posts/warp-shuffles.md")
    (post,) = log.entries
    assert (post.shape, post.title, post.date, post.tags, post.draft) == (
        "post", "Warp shuffles", dt.date(2025, 1, 5), ["cuda", "reduction", "learning-log"], False)
    assert log.diagnostics == [] and log.reassemble() == HUGO_TOML_POST
    assert parse(HUGO_TOML_POST.replace("draft = false", "draft = true"), "p.md").entries[0].draft


def test_invalid_toml_front_matter_is_an_error_naming_its_line():
    log = parse('+++\ntitle = "Warp shuffles\ndate = 2025-01-05\n+++\nA warp.\n', "p.md")
    bad = [d for d in log.diagnostics if d.code == "front-matter"]
    assert [(d.line, d.severity) for d in bad] == [(2, "error")] and "not valid TOML" in bad[0].message


def test_a_post_s_cross_references_lead_to_the_posts_they_name(build_site):
    """Jekyll's ``post_url`` and ``link``, Hugo's ``ref`` and ``relref`` (a page bundle too): each is
    the page of the post it names; one that names none is a warning at its line."""
    block_reduce = """\
---
title: Block reduce
date: 2025-01-08
---
Builds on [the warp tree]({% post_url 2025-01-05-warp-shuffles %}) and [again]({% link _posts/2025-01-05-warp-shuffles.md %}).
Also [the bundle]({{< ref "bundle" >}}) and [its tail]({{< relref "bundle#tail" >}}).
`{% post_url 2025-01-05-warp-shuffles %}` in code stays.
"""
    files = {"worklog/_posts/2025-01-05-warp-shuffles.md": AL_FOLIO_POST.encode(),
             "worklog/_posts/2025-01-08-block-reduce.md": block_reduce.encode(),
             "worklog/posts/bundle/index.md": (HUGO_TOML_POST.replace("Warp shuffles", "A bundle")
                                               + "\n## Tail\n\nThe last 32 lanes.\n").encode(),
             "worklog/assets/img/tree.png": PNG}
    site = build_site(None, files=files)
    page = site / "worklog" / "2025-01-08-block-reduce" / "index.html"
    article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find("article")
    hrefs = {a.get_text(): a["href"] for a in article.find_all("a")}
    assert hrefs["the warp tree"] == hrefs["again"] == "../2025-01-05-warp-shuffles-or-how-to-reduce-without-shared/"
    assert (hrefs["the bundle"], hrefs["its tail"]) == ("../2025-01-05-a-bundle/", "../2025-01-05-a-bundle/#tail")
    assert article.find("code", string="{% post_url 2025-01-05-warp-shuffles %}") is not None
    log = load(site.parent / "worklog")
    assert [d for d in log.diagnostics if d.severity != "info"] == []
    reading = (site / "worklog" / "reading-list" / "index.html").read_text(encoding="utf-8")
    assert "warp shuffle functions" in reading and "a-bundle" not in reading  # what was read, not written
    gone = parse("---\ntitle: T\ndate: 2025-01-05\n---\n[x]({% post_url 2024-01-01-nothing %})\n", "p.md")
    assert [(d.line, d.code) for d in gone.diagnostics] == [(5, "missing-file")]


def test_a_log_of_posts_is_titled_by_the_site_not_by_its_first_post(tmp_path):
    """A post's front matter is its own: the worklog home keeps the section's title, and the
    timeline's line of a Material post is its first sentence, not its title again."""
    from worklog_gen.site.pages import SiteContext, home_page

    (tmp_path / "posts").mkdir()
    (tmp_path / "posts" / "a.md").write_text(AL_FOLIO_POST, encoding="utf-8")
    (tmp_path / "posts" / "b.md").write_text(MATERIAL_POST, encoding="utf-8")
    log = load(tmp_path / "posts")
    assert log.front_matter == {}
    home = home_page(log, SiteContext(title="Worklog"))
    assert home.startswith("# Worklog\n") and "— wgmma reads its B operand from shared memory." in home


def test_an_al_folio_page_s_preamble_reads_its_liquid_as_an_entry_does(build_site):
    """A T-minus log kept as an al-folio page: its routine's figure and ``{{ site.baseurl }}`` link
    are published and shown on the worklog home, as an entry's are."""
    log = """\
<!-- ---
layout: page
title: Worklog
--- -->
Routine: coffee, an article, two hours of kernels.

{% include figure.liquid path="assets/img/plan.png" caption="The plan, by month." %}
[The plan as a file]({{ site.baseurl }}/assets/img/plan.png)

12/09/25 (T - 154)

Read the PTX ISA.
"""
    site = build_site(log, files={"worklog/assets/img/plan.png": PNG})
    home = BeautifulSoup((site / "worklog" / "index.html").read_text(encoding="utf-8"), "html.parser").find("article")
    (image,) = home.find_all("img", alt="The plan, by month.")
    assert (site / "worklog" / image["src"]).resolve().read_bytes() == PNG
    link = home.find("a", string="The plan as a file")
    assert (site / "worklog" / link["href"]).resolve().read_bytes() == PNG
    assert "{%" not in home.get_text() and "{{" not in home.get_text()
