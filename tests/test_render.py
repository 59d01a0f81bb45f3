"""Rendering frozen notebooks into pages: images as files, provenance, fresh/stale/missing.

The fixture notebooks are executed once per module into a store; every test renders
from (a copy of) it, which needs no kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from worklog_gen.freeze import store as freeze
from worklog_gen.freeze.execute import execute_notebook
from worklog_gen.kit.measure import Ceilings
from worklog_gen.freeze.cells import downloadable_notebook, notebook_markdown, trim_output
from worklog_gen.freeze.render import render_topic
from worklog_gen.kit.markdown import fence
from worklog_gen.site.kernels import kernels_page
from worklog_gen.kit.roofline import RooflinePoint, save_roofline
from worklog_gen.freeze.source_hash import source_hash

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("render")

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
STORE = Path("notebooks/_freeze")
ALPHA, BETA = Path("notebooks/alpha.py"), Path("notebooks/beta.py")
TOPICS = [("alpha", "Alpha", ALPHA), ("beta", "Beta", BETA)]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    root = tmp_path_factory.mktemp("render")
    (root / "notebooks").mkdir()
    for name in ("alpha.py", "beta.py"):
        shutil.copy(FIXTURES / name, root / "notebooks" / name)
        result = execute_notebook(root / "notebooks" / name, root, root / STORE, timeout=300, progress=False)
        assert result.ok, result.failure
    return root


@pytest.fixture
def project(executed, tmp_path):
    return Path(shutil.copytree(executed, tmp_path / "project"))


def record(root: Path, stem: str):
    return freeze.load_record(root / STORE, f"notebooks/{stem}.py")


def entry(root: Path, stem: str) -> Path:
    """The folder of the notebook's (one) machine entry: ``<store>/<stem>/<slug>``."""
    return freeze.machine_entries(root / STORE, f"notebooks/{stem}.py")[0].folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_images_become_files_and_nothing_is_inlined(executed):
    page = render_topic(ALPHA, STORE, executed, files_dir="alpha")
    images = {name: data for name, data in page.files.items() if name.endswith(".png")}
    assert len(images) == 1
    (name, data), = images.items()
    assert name.startswith("alpha/") and data.startswith(b"\x89PNG\r\n\x1a\n")
    alt = page.markdown.split(f"]({name})")[0].rsplit("![", 1)[1]
    assert alt.startswith("Figure 1")  # named after its section, not just "output"
    assert "data:image" not in page.markdown and "base64" not in page.markdown
    assert "iVBORw0KGgo" not in page.markdown  # the start of any base64 PNG


def test_the_page_opens_with_what_you_learn_and_the_results(executed):
    page = render_topic(ALPHA, STORE, executed, files_dir="alpha")
    rec = record(executed, "alpha")
    heading, intro, results = page.markdown.split("\n\n")[:3]
    assert heading == "# Alpha"  # the notebook's own title, then its first cell
    assert "You will learn" in intro
    results_at = page.markdown.index("## Results")
    assert results_at < page.markdown.index("- that plumbing folds") + 200  # right under the bullets
    table = page.markdown[results_at:].split("\n\n")[1]
    assert table.split("\n")[2] == "| Sum of the squares below 10 | 285 | ≥ 280, met | arithmetic by hand |"
    assert f"*Measured on {rec.device_label}, {rec.executed_at[:10]};" in page.markdown
    # then where the result comes from: a run on the CPU stays open, saying so
    box = page.markdown[page.markdown.index('!!! info "Frozen result: fresh"'):]
    box = box.split("\n\n```")[0]
    for fact in (rec.source_hash[:12], f"Python {rec.python}", rec.executed_at[:10], "fresh"):
        assert fact in box, fact
    assert rec.source_hash[:13] not in box  # the short hash only
    if rec.mode != "gpu":
        assert "CPU" in box and "say nothing about a GPU" in box
    assert page.warnings == []


def test_a_missed_goal_says_so(project):
    edit(project / ALPHA, "goal=280", "goal=300")
    md = render_topic(ALPHA, STORE, project, files_dir="alpha").markdown  # stale, still the frozen figure
    assert "| 285 | ≥ 280, met |" in md  # the frozen record's goal: the page never retypes a figure
    rec = record(project, "alpha")
    assert rec.headline["alpha_sum_of_squares"].met is True


def test_downloads_are_files_beside_the_page(executed):
    page = render_topic(ALPHA, STORE, executed, files_dir="alpha")
    assert page.files["alpha/alpha.ipynb"] == (entry(executed, "alpha") / "alpha.ipynb").read_bytes()
    assert page.files["alpha/alpha.py"] == (executed / ALPHA).read_bytes()
    assert "](alpha/alpha.ipynb)" in page.markdown and "](alpha/alpha.py)" in page.markdown


def test_cells_and_outputs_become_site_markdown(executed):
    md = render_topic(ALPHA, STORE, executed, files_dir="alpha").markdown
    assert "```text\nsum of squares: 285.0\n```" in md
    assert "The squares, saved as data and drawn." in md
    assert "```python\nsave_data(" in md  # an untagged cell stays open
    assert "<table><tr><th>name</th><th>value</th></tr>" in md  # HTML passed through
    md = render_topic(BETA, STORE, executed, files_dir="beta").markdown
    assert "```text\n0.75\n```" in md  # an execute_result


def test_tagged_cells_fold_behind_their_summary_with_the_output_shown(executed):
    md = render_topic(ALPHA, STORE, executed, files_dir="alpha").markdown
    fold = '??? fold "Imports and the figure\'s data (8 lines of code)"\n\n    ```python\n    import matplotlib'
    assert fold in md
    assert md.index(fold) < md.index("```text\nsum of squares: 285.0\n```")  # the output, open, after it
    # hide-output: the code open, its 300 lines of output folded, all of them there
    assert "```python\n# Three hundred lines of output\nfor i in range(300):" in md
    folded = md[md.index('??? fold "Output of: Three hundred lines of output"'):]
    assert "    line 0\n" in folded and "    line 299\n" in folded


def test_long_outputs_and_long_code_fold_behind_their_first_lines():
    import nbformat

    long_text = "\n".join(f"row {i}" for i in range(100))
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("# a long kernel\n" + "\n".join(f"x{i} = {i}" for i in range(70)),
                                  outputs=[nbformat.v4.new_output("stream", name="stdout", text=long_text)]),
        nbformat.v4.new_code_cell("y = 1", metadata={"tags": ["remove-cell"]}),
    ])
    md, _ = notebook_markdown(nb, "t")
    assert '??? fold "a long kernel (71 lines of code)"' in md
    head, rest = md.split('??? fold "88 more lines"')
    assert "```text\nrow 0\n" in head and "row 11\n```" in head and "row 12" not in head
    assert "    row 12\n" in rest and "    row 99\n" in rest
    assert "y = 1" not in md
    visible = "\n".join(line for line in md.split("\n") if not line.startswith("    "))  # outside the folds
    open_blocks = [block for block in visible.split("```") if block.startswith(("python\n", "text\n"))]
    assert max(block.count("\n") for block in open_blocks) <= 60


def test_retagging_or_recommenting_a_cell_shows_without_a_run(project):
    edit(project / ALPHA, '# %% tags=["hide-output"]\n# Three hundred lines of output',
         '# %% tags=["hide-cell"] summary="Print a lot"\n# Three hundred lines, commented anew')
    page = render_topic(ALPHA, STORE, project, files_dir="alpha")
    assert page.warnings == []  # still fresh
    whole = page.markdown[page.markdown.index('??? fold "Print a lot (3 lines of code, and what it shows)"'):]
    assert "commented anew" in whole and "    line 299" in whole  # code and output in the one fold
    assert '??? fold "Output of: Print a lot' not in page.markdown  # not folded twice


def test_rendering_is_deterministic(executed):
    first = render_topic(ALPHA, STORE, executed, files_dir="alpha")
    second = render_topic(ALPHA, STORE, executed, files_dir="alpha")
    assert first == second


def test_prose_edits_show_without_a_rerun(project):
    edit(project / ALPHA, "# The squares, saved as data and drawn.", "# Prose rewritten after the run.")
    page = render_topic(ALPHA, STORE, project, files_dir="alpha")
    assert "Prose rewritten after the run." in page.markdown
    assert "The squares, saved as data and drawn." not in page.markdown
    assert "Frozen result: fresh" in page.markdown and page.warnings == []
    assert any(name.endswith(".png") for name in page.files)


def test_a_stale_notebook_warns_and_shows_the_frozen_run(project):
    edit(project / ALPHA, "range(10)", "range(12)")
    page = render_topic(ALPHA, STORE, project, files_dir="alpha")
    assert len(page.warnings) == 1
    assert "notebooks/alpha.py" in page.warnings[0] and "stale" in page.warnings[0]
    assert '!!! warning "Frozen result: stale"' in page.markdown
    assert "worklog-gen execute notebooks/alpha.py" in page.markdown
    assert "range(10)" in page.markdown and "range(12)" not in page.markdown  # as it ran


def test_a_missing_result_says_how_to_produce_it(project):
    shutil.rmtree(project / STORE / "beta")
    page = render_topic(BETA, STORE, project, files_dir="beta")
    # never executed (a new site's topic): a note, not a warning, so that --strict builds
    assert not page.warnings and page.notes and "notebooks/beta.py" in page.notes[0]
    assert '!!! note "Not executed yet"' in page.markdown
    assert "worklog-gen execute notebooks/beta.py" in page.markdown
    assert "```python\nfrom worklog_gen.kit.notebook import headline" in page.markdown  # code, no outputs
    assert "0.75" not in page.markdown.split("```python", 1)[1].split("```", 1)[1]


def test_a_failed_run_warns(project):
    current = source_hash(project / ALPHA, project).hexdigest
    (project / STORE / "alpha.failed.json").write_text(json.dumps(
        {"notebook": "notebooks/alpha.py", "source_hash": current, "cell_index": 5, "line": 33, "ename": "ValueError", "evalue": "boom",
         "failed_at": "2026-01-02T03:04:05Z"}))
    page = render_topic(ALPHA, STORE, project, files_dir="alpha")
    assert page.warnings and "failed" in page.warnings[0] and "notebooks/alpha.py" in page.warnings[0]
    assert "ValueError: boom" in page.markdown


def test_errors_are_shown_without_terminal_colours(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "1 / 0", outputs=[nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                                  traceback=["\x1b[31mZeroDivisionError\x1b[0m: division by zero"])])])
    md, files = notebook_markdown(nb, "t")
    assert "**ZeroDivisionError**: division by zero" in md
    assert "```text\nZeroDivisionError: division by zero\n```" in md
    assert "\x1b" not in md and files == {}


def test_installed_modules_paths_are_cut_to_the_module_on_the_page(tmp_path):
    """A warning printed from inside torch names the environment's folder on the GPU machine (here a
    user's home); the page keeps the module's own path, and the text around it, in stdout, stderr,
    a result's text and a traceback."""
    home = "/home/ada/.venvs/gpu/lib/python3.12/site-packages"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("prof.step()", outputs=[
            nbformat.v4.new_output("stream", name="stderr",
                                   text=f"{home}/torch/profiler/profiler.py:224: UserWarning: Profiler clears events\n"),
            nbformat.v4.new_output("stream", name="stdout", text="C:\\Users\\ada\\env\\Lib\\site-packages\\triton\\a.py ok\n"),
            nbformat.v4.new_output("execute_result", data={"text/plain": f"'{home}/numpy/x.py'"}, execution_count=1),
            nbformat.v4.new_output("error", ename="ValueError", evalue="bad",
                                   traceback=[f'File "{home}/triton/compiler/compiler.py", line 3, in compile',
                                              f"\x1b[0;32m{home}/torch/nn/x.py\x1b[0m:7"]),
        ]),
        nbformat.v4.new_code_cell("print('a site-packages folder')", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="a site-packages folder, vendor/site-packages/x.py\n")]),
    ])
    body, _ = notebook_markdown(nb, str(tmp_path))
    assert "ada" not in body and "/home" not in body, body
    for shown in ("torch/profiler/profiler.py:224: UserWarning: Profiler clears events", "triton\\a.py ok",
                  "'numpy/x.py'", 'File "triton/compiler/compiler.py", line 3, in compile',
                  "a site-packages folder, vendor/site-packages/x.py", "torch/nn/x.py:7"):
        assert shown in body, (shown, body)


def test_the_downloaded_notebook_has_the_paths_cut_and_every_output_whole():
    """The executed notebook offered for download: an installed module's path cut in each kind of
    output, a coloured traceback line included, nothing trimmed; a notebook without one is its own bytes."""
    home = "/home/ada/.venvs/gpu/lib/python3.12/site-packages"
    long = "\n".join(f"step {i}" for i in range(500))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("run()", outputs=[
        nbformat.v4.new_output("stream", name="stderr", text=f"{home}/torch/profiler/profiler.py:224: UserWarning\n"),
        nbformat.v4.new_output("stream", name="stdout", text=long),
        nbformat.v4.new_output("execute_result", data={"text/plain": f"'{home}/numpy/x.py'"}, execution_count=1),
        nbformat.v4.new_output("error", ename="ValueError", evalue="bad",
                               traceback=[f"\x1b[0;32m{home}/torch/nn/x.py\x1b[0m:7", "\x1b[0;31mValueError\x1b[0m: bad"]),
    ])])
    raw = nbformat.writes(nb).encode()
    read = nbformat.reads(raw.decode(), as_version=4)
    got = nbformat.reads(downloadable_notebook(read, raw).decode(), as_version=4)
    assert read == nbformat.reads(raw.decode(), as_version=4)  # what it was given is not changed
    outputs = got.cells[0].outputs
    assert "/home/ada" not in json.dumps(got) and "site-packages" not in json.dumps(got), got
    assert outputs[0].text == "torch/profiler/profiler.py:224: UserWarning\n"
    assert outputs[1].text == long  # whole: the page's trimmed outputs point here
    assert outputs[2].data["text/plain"] == "'numpy/x.py'"
    assert outputs[3].traceback == ["torch/nn/x.py:7", "\x1b[0;31mValueError\x1b[0m: bad"]  # colours kept where no path was
    clean = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="a site-packages folder\n")])])).encode()
    assert downloadable_notebook(nbformat.reads(clean.decode(), as_version=4), clean) is clean


def test_a_damaged_frozen_notebook_is_an_error_that_names_it(project):
    (entry(project, "alpha") / "alpha.ipynb").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="alpha.ipynb: cannot read the frozen notebook"):
        render_topic(ALPHA, STORE, project, files_dir="alpha")


def test_trim_output_and_fence():
    assert trim_output("a\nb\n") == "a\nb"
    text = "\n".join(str(i) for i in range(1000))
    trimmed = trim_output(text, max_lines=30).split("\n")
    assert trimmed[:20] == [str(i) for i in range(20)] and trimmed[-10:] == [str(i) for i in range(990, 1000)]
    assert trimmed[20] == "[... 970 of 1000 lines left out; the executed notebook has them all ...]"
    assert len(trim_output("x" * 50_000, max_chars=1000)) < 1200
    assert fence("print('```')", "python") == "````python\nprint('```')\n````"


def test_render_imports_neither_torch_nor_triton(executed):
    code = ("import sys; from pathlib import Path; from worklog_gen.freeze import render; from worklog_gen.site import kernels; "
            f"render.render_topic(Path('{ALPHA}'), Path('{STORE}'), Path(r'{executed}'), files_dir='alpha'); "
            f"kernels.kernels_page([('alpha', 'Alpha', Path('{ALPHA}'))], Path('{STORE}'), Path(r'{executed}')); "
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported'")
    env = dict(os.environ, PYTHONPATH=str(Path(freeze.__file__).resolve().parents[1]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def _save_roofline(root: Path, stem: str, device: str, points: list[RooflinePoint]) -> None:
    ceilings = Ceilings(device=device, copy_gbps=4000.0, bf16_tflops=700.0, tf32_tflops=380.0, fp32_tflops=60.0)
    old = os.environ.get("WORKLOG_GEN_OUTPUT")
    os.environ["WORKLOG_GEN_OUTPUT"] = str(entry(root, stem) / "data")
    try:
        save_roofline(points, ceilings)
    finally:
        if old is None:
            del os.environ["WORKLOG_GEN_OUTPUT"]
        else:
            os.environ["WORKLOG_GEN_OUTPUT"] = old


def test_kernels_page_tables_headlines_and_draws_one_roofline(project):
    _save_roofline(project, "alpha", "NVIDIA H200", [RooflinePoint("alpha naive", 1e9, 4e9, 2.0)])
    _save_roofline(project, "beta", "NVIDIA H200", [RooflinePoint("beta tiled", 1e12, 1e9, 3.0, roof="bf16")])
    page = kernels_page(TOPICS + [("gamma", "Gamma", Path("notebooks/gamma.py"))], STORE, project)
    lines = page.markdown.split("\n")
    # One section per topic: its heading, then device, date and state once, then its figures.
    alpha = page.markdown.split("### [Alpha](topics/alpha.md)")[1].split("### ")[0]
    assert f"{record(project, 'alpha').device_label}, {record(project, 'alpha').executed_at[:10]}, **fresh**" in alpha
    alpha_row = next(line for line in alpha.split("\n") if "| Sum of the squares below 10 |" in line)  # its label
    assert "| 285 |" in alpha_row
    assert any("`beta_ratio`" in line and "| 0.750 | x |" in line for line in lines)
    assert "### [Gamma](topics/gamma.md)\n\nNot executed yet" in page.markdown

    svg = page.files["kernels/roofline.vega.svg"]
    assert svg.startswith(b"<svg") and b"alpha" in svg and b"beta" in svg  # the legend names the topics
    assert "](kernels/roofline.vega.svg)" in page.markdown
    spec = json.loads(page.files["kernels/roofline.vega.json"])
    rows = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")["data"]["values"]
    assert [(r["topic"], r["variant"]) for r in rows] == [("alpha", "alpha naive"), ("beta", "beta tiled")]
    assert page.warnings == []
    assert kernels_page(TOPICS, STORE, project).files == kernels_page(TOPICS, STORE, project).files


def test_kernels_page_draws_each_device_against_its_own_roofs(project):
    _save_roofline(project, "alpha", "NVIDIA H200", [RooflinePoint("alpha naive", 1e9, 4e9, 2.0)])
    _save_roofline(project, "beta", "NVIDIA A100", [RooflinePoint("beta tiled", 1e12, 1e9, 3.0)])
    page = kernels_page(TOPICS, STORE, project)
    assert page.warnings == []
    assert "## Rooflines" in page.markdown and "### NVIDIA H200" in page.markdown and "### NVIDIA A100" in page.markdown
    assert page.markdown.index("### NVIDIA H200") < page.markdown.index("### NVIDIA A100")  # as they first appear
    for stem, device, variant in (("kernels/roofline", "NVIDIA H200", "alpha naive"),
                                  ("kernels/roofline-2", "NVIDIA A100", "beta tiled")):
        spec = json.loads(page.files[f"{stem}.vega.json"])
        rows = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")["data"]["values"]
        assert [r["variant"] for r in rows] == [variant] and device in json.dumps(spec["title"])
        assert f"]({stem}.vega.svg)" in page.markdown


def test_kernels_page_without_roofline_data(executed):
    page = kernels_page(TOPICS, STORE, executed)
    assert not any(name.startswith("kernels/roofline") for name in page.files)
    assert "No notebook has saved roofline data yet" in page.markdown


def test_figures_are_named_after_their_section():
    import nbformat

    from worklog_gen.freeze.cells import notebook_markdown

    png = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## 6. Benchmark: 2^12 [to] 2^28\n\nText."),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output("display_data", data=png) for _ in range(2)]),
        nbformat.v4.new_markdown_cell("## 8. Roofline"),
        nbformat.v4.new_code_cell("roof()", outputs=[nbformat.v4.new_output("display_data", data=png)]),
    ])
    markdown, files = notebook_markdown(nb, "t")
    assert len(files) == 3
    assert "![Figure 1 in 6. Benchmark: 2^12 (to) 2^28](" in markdown
    assert "![Figure 2 in 6. Benchmark: 2^12 (to) 2^28](" in markdown
    assert "![Figure 1 in 8. Roofline](" in markdown


def test_a_cells_run_of_prints_is_one_block():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("for i in range(3): print(i)", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text=f"line {i}\n") for i in range(3)])])
    md, _ = notebook_markdown(nb, "t")
    assert "```text\nline 0\nline 1\nline 2\n```" in md


def test_the_results_table_keeps_the_order_the_notebook_recorded():
    from worklog_gen.freeze.record import FreezeRecord, Headline
    from worklog_gen.freeze.render import results_table

    record = FreezeRecord(notebook="n.py", source_hash="0" * 64, executed_at="2026-11-25T00:00:00Z", mode="gpu",
                          gpu="NVIDIA H100 80GB HBM3",
                          headline={"a_second": Headline(2.0, "x", label="Second"),
                                    "b_first": Headline(1.0, "x", label="First")})  # as record.json sorts them
    table = results_table(record, ["b_first", "a_second"])
    assert table.index("| First |") < table.index("| Second |")
    assert "Measured on NVIDIA H100 80GB HBM3, 2026-11-25" in table
    assert results_table(record).index("| Second |") < results_table(record).index("| First |")  # no order: as held


def test_headline_tables_name_figures_by_label_and_write_ratios_to_three_decimals():
    from worklog_gen.freeze.record import FreezeRecord, Headline
    from worklog_gen.freeze.render import headline_table, results_table

    record = FreezeRecord(notebook="n.py", source_hash="0" * 64, executed_at="2026-11-25T00:00:00Z", mode="gpu",
                          gpu="NVIDIA H100 80GB HBM3",
                          headline={"fa_vs_best": Headline(0.9561337, "x", label="Forward against the fastest", goal=1.0),
                                    "fa_vs_flash": Headline(1.6321560, "x"),
                                    "frac": Headline(0.91263, "fraction", label="Fraction of the copy roof"),
                                    "tflops": Headline(570.5275, "TFLOP/s", label="Forward, bf16")})
    results = results_table(record)
    assert "| Forward against the fastest | 0.956× | ≥ 1×, **missed** |" in results
    assert "| `fa_vs_flash` | 1.632× |" in results and "| 0.913 fraction |" in results
    assert "| Forward, bf16 | 570.5 TFLOP/s |" in results
    kernels = headline_table(record)
    assert "| Forward against the fastest | 0.956 | x |" in kernels and "`fa_vs_best`" not in kernels
    assert "| `fa_vs_flash` | 1.632 | x |" in kernels  # no label: its name
