"""A log of Obsidian daily notes: wikilinks between the days, to notes and to images, read and
built as Obsidian would show them."""

from __future__ import annotations

import base64
from pathlib import Path

from bs4 import BeautifulSoup

from worklog_gen.log.parse import load, parse
from worklog_gen.log.internal_links import Vault, resolve, rewrite
from worklog_gen.site.pages import SiteContext, summary

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

DAY_1 = """\
---
tags: [daily, cuda]
---
Read [[2025-12-07#Masks and tails|the masks]] and the [FlashAttention paper](https://arxiv.org/abs/2205.14135).
- [x] vector add in Triton
- [ ] softmax -> Tmr
"""

DAY_2 = """\
Carried over from [[2025-12-08]]: the softmax.
![[roofline.png|400]]
![[roofline.png|The roofline of the softmax]]
Not yet written: [[Warp specialization]]. In code: `[[2025-12-08]]`.
```
[[2025-12-08]]
```
"""


DAY_0 = "## Masks and tails\n`offsets < n_elements` guards the tail.\n"


def _vault(tmp_path: Path) -> Path:
    """A folder of daily notes as Obsidian keeps them: a folder a month, attachments apart."""
    log = tmp_path / "worklog"
    for folder in ("2025-11", "2025-12", "attachments"):
        (log / folder).mkdir(parents=True)
    (log / "2025-11" / "2025-12-07.md").write_text(DAY_0, encoding="utf-8")  # filed in the wrong month
    (log / "2025-12" / "2025-12-08.md").write_text(DAY_1, encoding="utf-8")
    (log / "2025-12" / "2025-12-09.md").write_text(DAY_2, encoding="utf-8")
    (log / "attachments" / "roofline.png").write_bytes(PNG)
    return log


def test_a_wikilink_is_found_as_obsidian_finds_it(tmp_path):
    log = _vault(tmp_path)
    vault = Vault(log)
    here = log / "2025-12"
    assert vault.find("2025-12-08", here) == (here / "2025-12-08.md").resolve()  # beside the file
    assert vault.find("2025-11/2025-12-07", here) == (log / "2025-11" / "2025-12-07.md").resolve()  # from the root
    assert vault.find("2025-12-07", here) == (log / "2025-11" / "2025-12-07.md").resolve()  # by name
    assert vault.find("roofline.png", here) == (log / "attachments" / "roofline.png").resolve()
    assert vault.find("ROOFLINE.PNG", here) == (log / "attachments" / "roofline.png").resolve()
    assert vault.find("Warp specialization", here) is None and vault.find("../../etc/passwd", here) is None
    (log / ".trash").mkdir()
    (log / ".trash" / "old plan.md").write_text("gone\n", encoding="utf-8")
    assert Vault(log).find("old plan", here) is None  # a hidden folder is no part of the log


def test_wikilinks_become_markdown_links_and_code_stays_as_written(tmp_path):
    log = _vault(tmp_path)
    file = log / "2025-12" / "2025-12-09.md"
    text, made, problems = resolve(DAY_2, file, Vault(log), "worklog/2025-12/2025-12-09.md", 1)
    assert text.split("\n") == [
        "Carried over from [2025-12-08](<2025-12-08.md>): the softmax.",
        "![roofline.png](<../attachments/roofline.png>)",
        "![The roofline of the softmax](<../attachments/roofline.png>)",
        "Not yet written: Warp specialization. In code: `[[2025-12-08]]`.",
        "```", "[[2025-12-08]]", "```", ""]
    assert rewrite(DAY_2, made) == text  # the page writes what the parser read
    assert [(d.line, d.code, d.severity) for d in problems] == [(4, "wikilink", "info")]
    anchor, _, _ = resolve("[[2025-12-07#Masks and tails]] [[#Plan]]", file, Vault(log), "x.md", 1)
    assert anchor == "[2025-12-07 > Masks and tails](<../2025-11/2025-12-07.md#masks-and-tails>) [Plan](#plan)"


def test_a_log_of_daily_notes_reads_its_wikilinks_as_links(tmp_path):
    folder = _vault(tmp_path)
    log = load(folder)
    _, day_1, day_2 = log.entries
    assert [link.url for link in day_2.links] == ["2025-12-08.md"]
    assert [image.url for image in day_2.images] == ["../attachments/roofline.png"] * 2
    assert [link.url for link in day_1.links][0] == "../2025-11/2025-12-07.md#masks-and-tails"
    assert [(d.code, d.line) for d in log.diagnostics] == [("wikilink", 4)]
    assert [t.status for t in day_1.tasks] == ["done", "carried"]
    assert log.reassemble(str(folder / "2025-12" / "2025-12-09.md")) == DAY_2  # the text as written
    assert summary(day_2) == "Carried over from 2025-12-08: the softmax."


def test_a_wikilink_leads_to_the_day_s_page_and_its_image_is_published(build_site):
    site = build_site(None, files={"worklog/2025-11/2025-12-07.md": DAY_0.encode(),
                                   "worklog/2025-12/2025-12-08.md": DAY_1.encode(),
                                   "worklog/2025-12/2025-12-09.md": DAY_2.encode(),
                                   "worklog/attachments/roofline.png": PNG})  # strict: a note is no warning
    page = site / "worklog" / "2025-12-09" / "index.html"
    article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find("article")
    first = article.find("a", string="2025-12-08")
    assert (page.parent / first["href"]).resolve() == (site / "worklog" / "2025-12-08").resolve()
    images = article.find_all("img")
    assert len(images) == 2 and all((page.parent / i["src"]).resolve().read_bytes() == PNG for i in images)
    assert "[[" not in article.get_text().replace("[[2025-12-08]]", "")  # but for the code, as written
    assert article.find("code", string="[[2025-12-08]]") is not None
    masks = BeautifulSoup((site / "worklog" / "2025-12-08" / "index.html").read_text(encoding="utf-8"),
                          "html.parser").find("article").find("a", string="the masks")
    assert masks["href"] == "../2025-12-07/#masks-and-tails"


def test_without_wikilinks_an_entry_records_none():
    (entry,) = parse("2025-12-09\nRead [the guide](https://docs.nvidia.com/cuda/).\n", "n.md").entries
    assert entry.internal_links == {}
