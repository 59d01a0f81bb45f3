"""Files of the log's own folder that an entry shows or links: a screenshot beside the log, a PDF
of notes. Each is published beside its entry's page and linked there, on the page, in its list
of links, in the reading list and in the feed; one that is not there is a warning naming the
file and line, and the page links it as written (MkDocs does not warn a second time about a
page the author never wrote)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from worklog_gen.log import load
from worklog_gen.log.local_files import Repository, file_target

SCREENSHOT = b"\x89PNG\r\n\x1a\n the ncu screenshot of the tiled matmul"
NOTES = b"%PDF-1.4 wgmma notes"

LOG = """\
---
target_date: 2026-05-12
---
# Countdown to the MoE kernel

12/19/25 (T - 144)

- Profiled the tiled matmul in Nsight Compute: ![ncu, tiled matmul](img/ncu%20tiled.png)
- Wrote up what wgmma needs: [my wgmma notes](notes/wgmma.pdf) - Done
- The screenshot again, by reference: ![same shot][shot]
- Code stays code: `![ncu](img/ncu%20tiled.png)`

[shot]: img/ncu%20tiled.png

```markdown
![ncu](img/ncu%20tiled.png)
```

12/20/25 (T - 143)

- Compared against yesterday's ![ncu, tiled matmul](img/ncu%20tiled.png)
- The profile I forgot to save: ![ncu, persistent](img/ncu-persistent.png)
- And the slides I never downloaded: [slides](notes/hopper.pdf)
"""


@pytest.mark.parametrize("url, image, target", [
    ("img/ncu.png", True, "img/ncu.png"),
    ("img/ncu%20tiled.png?raw=1#top", True, "img/ncu tiled.png"),
    ("/images/roofline.svg", True, "/images/roofline.svg"),
    ("../shared/plot.png", True, "../shared/plot.png"),
    ("notes/wgmma.pdf", False, "notes/wgmma.pdf"),
    ("kernels/add.py", False, "kernels/add.py"),
    ("2025-12-08.md", False, None),  # a page: MkDocs checks it
    ("../blog/", False, None),
    ("README", False, None),
    ("#countdown", False, None),
    ("https://triton-lang.org/main/index.html", True, None),
    ("//cdn.example.org/x.png", True, None),
    ("mailto:me@example.org", False, None),
])
def test_which_urls_name_a_file_of_the_log(url, image, target):
    assert file_target(url, image=image) == target


def _log(tmp_path: Path, text: str = LOG) -> Path:
    folder = tmp_path / "worklog"
    (folder / "img").mkdir(parents=True)
    (folder / "notes").mkdir()
    (folder / "log.md").write_text(text, encoding="utf-8")
    (folder / "img" / "ncu tiled.png").write_bytes(SCREENSHOT)
    (folder / "notes" / "wgmma.pdf").write_bytes(NOTES)
    return folder


def test_a_missing_image_or_file_is_a_warning_naming_its_line(tmp_path):
    folder = _log(tmp_path)
    (tmp_path / "secret.png").write_bytes(b"outside")
    with (folder / "log.md").open("a", encoding="utf-8") as f:
        f.write("- Outside the log: ![no](../secret.png), and an old site's ![logo](/images/logo.png)\n")
    log = load(folder)
    found = [(d.line, d.severity, d.code) for d in log.diagnostics]
    assert found == [(22, "warning", "missing-image"), (23, "warning", "missing-file"),
                     (24, "warning", "unsafe-path")]
    assert "'img/ncu-persistent.png' not found" in log.diagnostics[0].message


def test_a_shown_or_linked_file_is_published_beside_its_entry_and_linked_everywhere(build_site):
    files = {"worklog/img/ncu tiled.png": SCREENSHOT, "worklog/notes/wgmma.pdf": NOTES}
    site = build_site(LOG.replace("- The profile I forgot", "<!--").replace("notes/hopper.pdf)\n", "x) -->\n"),
                      files=files, plugin={"feed": True})
    day = site / "worklog" / "2025-12-19"
    article = BeautifulSoup((day / "index.html").read_text(encoding="utf-8"), "html.parser").find("article")
    shots = article.find_all("img", alt=["ncu, tiled matmul", "same shot"])
    assert len(shots) == 2 and all((day / img["src"].replace("%20", " ")).read_bytes() == SCREENSHOT for img in shots)
    notes = [a["href"] for a in article.find_all("a") if a["href"].endswith("wgmma.pdf")]
    assert len(notes) == 2 and all((day / href).read_bytes() == NOTES for href in notes)  # the text, and Links
    code = [c.get_text() for c in article.find_all("code")]
    assert "![ncu](img/ncu%20tiled.png)" in code and any("![ncu](img/ncu%20tiled.png)" in c for c in code[1:])
    # the next day's page shows the same file, published once, from its first day's folder
    nxt = site / "worklog" / "2025-12-20"
    img = BeautifulSoup((nxt / "index.html").read_text(encoding="utf-8"), "html.parser").find("article").find("img")
    assert (nxt / img["src"].replace("%20", " ")).resolve() == (day / "img" / "ncu tiled.png").resolve()
    reading = site / "worklog" / "reading-list"
    listed = BeautifulSoup((reading / "index.html").read_text(encoding="utf-8"), "html.parser").find("table")
    (href,) = [a["href"] for a in listed.find_all("a") if a["href"].endswith(".pdf")]
    assert (reading / href).read_bytes() == NOTES
    content = ET.fromstring((site / "feed.xml").read_text(encoding="utf-8"))
    assert "worklog/2025-12-19/notes/wgmma.pdf" in ET.tostring(content, encoding="unicode")


def test_a_missing_file_is_linked_as_written_and_warned_about_once(build_site, caplog):
    files = {"worklog/img/ncu tiled.png": SCREENSHOT, "worklog/notes/wgmma.pdf": NOTES}
    site = build_site(LOG, files=files, strict=False)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 2 and all("worklog/log.md:2" in w for w in warnings)  # ours, not MkDocs'
    article = BeautifulSoup((site / "worklog/2025-12-20/index.html").read_text(encoding="utf-8"),
                            "html.parser").find("article")
    assert article.find("img", alt="ncu, persistent")["src"] == "img/ncu-persistent.png"
    assert any(a["href"] == "notes/hopper.pdf" for a in article.find_all("a"))


def test_the_preamble_s_images_and_files_are_published_beside_the_worklog_home(build_site, caplog):
    plan = b"\x89PNG\r\n\x1a\n the plan: softmax, matmul, attention, MoE"
    text = LOG.replace("# Countdown to the MoE kernel\n",
                       "# Countdown to the MoE kernel\n\nThe plan: ![the plan](img/plan.png), and the "
                       "syllabus I lost: [syllabus](notes/syllabus.pdf).\n")
    files = {"worklog/img/ncu tiled.png": SCREENSHOT, "worklog/notes/wgmma.pdf": NOTES, "worklog/img/plan.png": plan}
    site = build_site(text, files=files, strict=False)
    home = site / "worklog"
    img = BeautifulSoup((home / "index.html").read_text(encoding="utf-8"), "html.parser").find("img", alt="the plan")
    assert (home / img["src"]).read_bytes() == plan
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("worklog/log.md:6: warning: linked file 'notes/syllabus.pdf' not found" in w for w in warnings)
    assert not any("Doc file" in w for w in warnings)  # MkDocs has nothing to say of a page the author never wrote


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_with_sanitize_a_file_that_can_run_script_is_not_published(build_site, caplog, sanitize):
    """An SVG runs its ``<script>`` in the site's origin when a reader opens it by its address: with
    ``sanitize: true`` (a log others write too) it stays off the site, with a warning naming the line."""
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'
    text = LOG.replace("- The profile I forgot", "- A diagram: ![warps](img/warps.svg) and [its source](img/warps.svg)\n<!--")
    text = text.replace("notes/hopper.pdf)\n", "x) -->\n")
    files = {"worklog/img/ncu tiled.png": SCREENSHOT, "worklog/notes/wgmma.pdf": NOTES, "worklog/img/warps.svg": svg}
    site = build_site(text, files=files, plugin={"sanitize": sanitize}, strict=False)
    published = list(site.rglob("warps.svg"))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    if sanitize:
        assert published == [] and (site / "worklog/2025-12-19/img/ncu tiled.png").is_file()
        assert warnings == ["worklog_gen: worklog/log.md:22: warning: 'img/warps.svg' is not published: with sanitize: true, a file "
                            "a browser may run script in (an SVG, an XHTML or XML page) stays off the site"]
    else:
        assert [p.read_bytes() for p in published] == [svg] and warnings == []


def test_a_link_to_one_of_the_log_s_own_files_leads_to_its_page(build_site):
    """A log of one file per day links its days by file name; the files are no pages of the site,
    so each link leads to the page of the file's entry (or, for a file of many entries, the home)."""
    files = {
        "worklog/days/2025-12-08.md": b"Read the PTX ISA.\n\n## wgmma\n\nA warpgroup's matmul.\n",
        "worklog/days/2025-12-09.md": b"---\ncountdown: 154\n---\nWent on from [yesterday](2025-12-08.md#wgmma) "
                                      b"and [the plan](../plan.md).\n",
        "worklog/plan.md": b"# The plan\n\nSoftmax, matmul, attention, MoE.\n\n12/10/25 (T - 153)\n\nx\n\n"
                           b"12/11/25 (T - 152)\n\ny\n",
    }
    site = build_site(None, files=files)
    day = site / "worklog" / "2025-12-09"
    article = BeautifulSoup((day / "index.html").read_text(encoding="utf-8"), "html.parser").find("article")
    hrefs = {a.get_text(): a["href"] for a in article.find_all("a")}
    assert hrefs["yesterday"] == "../2025-12-08/#wgmma" and hrefs["the plan"] == "../"
    reading = (site / "worklog/reading-list/index.html").read_text(encoding="utf-8")
    assert "yesterday" not in reading and "0 distinct links" in reading  # the log's own pages: written, not read


# --- files of the repository outside the worklog folder --------------------------------------------

REPO_LOG = """\
12/19/25 (T - 144)

Wrote [the softmax kernel](../kernels/softmax.cu), its max at [line 42](../kernels/softmax.cu#L42), as
[the README](../README.md#plan) says. Not mine: [secrets](../../../../../../etc/secrets.txt).
And [odd](../kernels/softmax.cu#L7>"onmouseover=alert(1)).
"""


def test_with_repo_url_a_link_to_a_file_of_the_repository_leads_to_it_there(build_site, caplog):
    """A log kept in a repository links its own code and README as on GitHub: with ``repo_url`` the
    page, the day's links and the reading list lead to each file on the repository's site (fragment
    kept), nothing is published, and only the link that leaves the repository is a warning."""
    files = {"kernels/softmax.cu": b"__global__ void softmax() {}\n", "README.md": b"# GPU log\n## Plan\n"}
    site = build_site(REPO_LOG, files=files, strict=False, config={"repo_url": "https://github.com/me/gpu-log/"})
    blob = "https://github.com/me/gpu-log/blob/HEAD/"
    day = BeautifulSoup((site / "worklog/2025-12-19/index.html").read_text(encoding="utf-8"), "html.parser")
    hrefs = [a["href"] for a in day.find("article").find_all("a") if a["href"].startswith(blob)]
    wanted = [f"{blob}kernels/softmax.cu", f"{blob}kernels/softmax.cu#L42", f"{blob}README.md#plan"]
    assert hrefs[:3] == wanted and set(wanted) <= set(hrefs)  # the text, then the day's links
    listed = (site / "worklog/reading-list/index.html").read_text(encoding="utf-8")
    assert all(f'href="{url}"' in listed for url in wanted)
    assert not list(site.rglob("softmax.cu")) and not (site / "README.md").exists()
    odd = f'{blob}kernels/softmax.cu#L7%3E%22onmouseover=alert(1)'  # a fragment that would end the link
    assert [a["href"] for a in day.find("article").find_all("a") if "L7" in a["href"]][:1] == [odd]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "etc/secrets.txt" in warned[0]


def test_without_repo_url_the_warning_says_how_to_link_a_file_of_the_repository(tmp_path):
    (tmp_path / "worklog").mkdir()
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "softmax.cu").write_text("__global__ void softmax() {}\n", encoding="utf-8")
    (tmp_path / "worklog" / "log.md").write_text(REPO_LOG, encoding="utf-8")
    refused = [d for d in load(tmp_path / "worklog").diagnostics if d.code == "unsafe-path"]
    assert len(refused) == 4 and all("with repo_url in mkdocs.yml" in d.message for d in refused)
    repository = Repository.of("https://github.com/me/gpu-log", tmp_path)
    refused = [d for d in load(tmp_path / "worklog", repository=repository).diagnostics if d.code == "unsafe-path"]
    assert [d.line for d in refused] == [4]  # ../etc/secrets.txt leaves the repository


@pytest.mark.parametrize("repo_url, url", [
    ("https://github.com/me/gpu-log", "https://github.com/me/gpu-log/blob/HEAD/site/kernels/my%20softmax.cu"),
    ("https://gitlab.com/me/gpu-log.git/", "https://gitlab.com/me/gpu-log/-/blob/HEAD/site/kernels/my%20softmax.cu"),
    ("https://bitbucket.org/me/gpu-log", "https://bitbucket.org/me/gpu-log/src/HEAD/site/kernels/my%20softmax.cu"),
])
def test_a_file_s_address_on_the_repository_s_site(tmp_path, repo_url, url):
    """The path is the file's from the repository's root (the folder holding ``.git``, above
    ``mkdocs.yml``'s when the site is a folder of it), on the default branch."""
    (tmp_path / ".git").mkdir()
    project = tmp_path / "site"
    (project / "kernels").mkdir(parents=True)
    (project / "kernels" / "my softmax.cu").write_text("", encoding="utf-8")
    repository = Repository.of(repo_url, project)
    assert repository.file_url(repository.file("kernels/my softmax.cu", project)) == url
    assert Repository.of(None, project) is None and Repository.of("git@github.com:me/gpu-log.git", project) is None
