"""A freeze-store record per machine: layout, legacy flat entries, status, the primary machine,
and the side-by-side tables and scaling section of the site.

Every store here is built by code in tmp_path (records written through the store's own writer,
a legacy flat entry written as the old code laid it out); no notebook is executed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from mkdocs.exceptions import PluginError

from worklog_gen.cli import main
from worklog_gen.config import load_plugin_config
from worklog_gen.freeze import execute
from worklog_gen.freeze import store as freeze
from worklog_gen.freeze.record import FailureRecord, FreezeRecord, Headline, NotebookState
from worklog_gen.freeze.render import headline_table, render_topic, results_table, short_machine
from worklog_gen.freeze.source_hash import read_notebook, source_hash
from worklog_gen.site.generate import check_primary_machine
from worklog_gen.site.kernels import classify_scaling, kernels_page, speed_ratio

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
STORE = Path("notebooks/_freeze")
ALPHA = Path("notebooks/alpha.py")
TOPICS = [("alpha", "Alpha", ALPHA), ("beta", "Beta", Path("notebooks/beta.py"))]
MKDOCS_YML = """\
site_name: machines test
plugins:
  - worklog:
      topics:
        - id: alpha
          title: Alpha
          notebook: notebooks/alpha.py
        - id: beta
          title: Beta
          notebook: notebooks/beta.py
"""
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
H100_SLUG, H200_SLUG = "nvidia-h100-80gb-hbm3", "nvidia-h200"

# One kernel of each kind, as an H100 and an H200 measure them: the datasheets give the H200
# 4.8 / 3.35 = 1.433x the HBM bandwidth and the same dense bf16 peak.
FIGURES = {
    H100: {"copy": (3.0, "TB/s"), "matmul": (700.0, "TFLOP/s"), "attention": (2.0, "ms"), "vs_torch": (1.0, "x"),
           "ridge": (21.8, "FLOP/byte")},
    H200: {"copy": (4.3, "TB/s"), "matmul": (710.0, "TFLOP/s"), "attention": (1.6, "ms"), "vs_torch": (1.1, "x"),
           "ridge": (15.0, "FLOP/byte")},
}


def make_project(root: Path) -> Path:
    (root / "notebooks").mkdir(parents=True)
    for name in ("alpha.py", "beta.py"):
        shutil.copy(FIXTURES / name, root / "notebooks" / name)
    (root / "mkdocs.yml").write_text(MKDOCS_YML)
    return root


def make_record(root: Path, gpu: str, executed_at: str, *, fresh: bool = True) -> FreezeRecord:
    """A GPU run of alpha on ``gpu`` with :data:`FIGURES`; its source hash is the current one when ``fresh``."""
    hashed = source_hash(root / ALPHA, root)
    headline = {name: Headline(value, unit, label=f"The {name} figure", goal=1.0 if unit == "x" else None)
                for name, (value, unit) in FIGURES.get(gpu, FIGURES[H200]).items()}
    return FreezeRecord(notebook=ALPHA.as_posix(), source_hash=hashed.hexdigest if fresh else "0" * 64,
                        hashes=hashed.parts, executed_at=executed_at, mode="gpu", gpu=gpu, driver="580.1", cuda="13.0",
                        gpus=[gpu], headline=headline)


def write(root: Path, record: FreezeRecord) -> Path:
    """Write ``record`` through the store's writer, with the notebook and a ``data/headline.json``."""
    data = root / "out"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir()
    (data / "headline.json").write_text(json.dumps({n: dataclasses.asdict(h) for n, h in record.headline.items()}))
    return freeze.write_entry(root / STORE, "alpha", read_notebook(root / ALPHA), data, record)


def write_legacy(root: Path, record: FreezeRecord) -> Path:
    """A flat entry ``<store>/alpha/{record.json,alpha.ipynb,data/}`` as the store wrote it before it
    kept a record per machine (no ``machine`` key)."""
    entry = root / STORE / "alpha"
    (entry / "data").mkdir(parents=True)
    nbformat.write(read_notebook(root / ALPHA), str(entry / "alpha.ipynb"))
    (entry / "data" / "headline.json").write_text(json.dumps({n: h.value for n, h in record.headline.items()}))
    data = record.to_json()
    del data["machine"]
    (entry / "record.json").write_text(json.dumps(data, indent=2))
    return entry


def files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def two_machines(project) -> Path:
    """alpha frozen on an H100 (older) and an H200 (newer), both fresh; beta never executed."""
    write(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    write(project, make_record(project, H200, "2026-11-26T08:20:15Z"))
    return project


# --- the store --------------------------------------------------------------------------------


def test_machine_slugs_are_folder_names():
    assert freeze.machine_slug("NVIDIA H200") == "nvidia-h200"
    assert freeze.machine_slug(H100) == H100_SLUG
    assert freeze.machine_slug("2 × NVIDIA H200, NVLink NV18") == "2x-nvidia-h200-nvlink-nv18"
    assert freeze.machine_slug("CPU (TRITON_INTERPRET=1)") == "cpu-triton-interpret-1"
    assert freeze.machine_slug("../../etc") == "etc" and freeze.machine_slug("×") == "x"
    assert freeze.machine_slug("") == "unknown"


def test_a_run_on_machine_b_keeps_machine_a_record(project):
    a = write(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    assert a == project / STORE / "alpha" / H100_SLUG
    before = files(a)
    b = write(project, make_record(project, H200, "2026-11-26T08:20:15Z"))
    assert b == project / STORE / "alpha" / H200_SLUG
    assert files(a) == before  # untouched
    assert sorted(p.name for p in (project / STORE / "alpha").iterdir()) == [H100_SLUG, H200_SLUG]
    assert json.loads((b / "record.json").read_text())["machine"] == H200  # the display name is kept

    # a second run on B replaces B's record only
    write(project, dataclasses.replace(make_record(project, H200, "2026-11-27T00:00:00Z"), wall_seconds=9.0))
    assert files(a) == before
    assert freeze.load_record(project / STORE, ALPHA, machine="nvidia-h200").executed_at == "2026-11-27T00:00:00Z"
    assert freeze.load_record(project / STORE, ALPHA, machine=H100).executed_at == "2026-11-25T14:15:16Z"
    assert freeze.load_record(project / STORE, ALPHA).machine_name == H200  # the newest by default
    assert not list((project / STORE).rglob(".*")), "temporary folders left behind"


def test_a_legacy_flat_entry_reads_as_its_machine_and_moves_on_the_next_write(project):
    legacy = write_legacy(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    before = files(legacy)
    (st,) = freeze.notebook_states(ALPHA, project, project / STORE)
    assert (st.state, st.machine, st.slug, st.legacy, st.entry) == (NotebookState.FRESH, H100, H100_SLUG, True, legacy)
    page = render_topic(ALPHA, STORE, project, files_dir="alpha")  # still renders
    assert not page.warnings and "Other machines" not in page.markdown

    # a legacy failure of the same machine, for the current code
    current = source_hash(project / ALPHA, project).hexdigest
    failure = FailureRecord(notebook=ALPHA.as_posix(), source_hash=current, failed_at="2026-11-25T15:00:00Z",
                            ename="RuntimeError", evalue="boom")
    (project / STORE / "alpha.failed.json").write_text(json.dumps(failure.to_json()))
    assert freeze.notebook_state(ALPHA, project, project / STORE, machine=H100).state is NotebookState.FAILED

    write(project, make_record(project, H200, "2026-11-26T08:20:15Z"))
    folder = project / STORE / "alpha"
    assert sorted(p.name for p in folder.iterdir()) == [H100_SLUG, f"{H100_SLUG}.failed.json", H200_SLUG]
    assert files(folder / H100_SLUG) == before  # moved whole, byte for byte
    assert not (project / STORE / "alpha.failed.json").exists()
    states = {st.machine: st.state for st in freeze.notebook_states(ALPHA, project, project / STORE)}
    assert states == {H200: NotebookState.FRESH, H100: NotebookState.FAILED}


def test_a_legacy_flat_entry_of_the_same_machine_is_replaced(project):
    write_legacy(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    write(project, make_record(project, H100, "2026-11-28T00:00:00Z"))
    assert sorted(p.name for p in (project / STORE / "alpha").iterdir()) == [H100_SLUG]
    assert freeze.load_record(project / STORE, ALPHA).executed_at == "2026-11-28T00:00:00Z"


def test_each_machine_has_its_own_state(two_machines):
    root = two_machines
    write(root, make_record(root, H100, "2026-11-25T14:15:16Z", fresh=False))  # the H100's run is of older code
    current = source_hash(root / ALPHA, root).hexdigest
    freeze.write_failure(root / STORE, ALPHA, FailureRecord(
        notebook=ALPHA.as_posix(), source_hash=current, failed_at="2026-11-27T00:00:00Z", ename="OutOfMemoryError",
        evalue="CUDA out of memory", machine="2 × NVIDIA H200, NVLink NV18"))
    assert (root / STORE / "alpha" / "2x-nvidia-h200-nvlink-nv18.failed.json").is_file()
    states = {st.machine: st.state.value for st in freeze.notebook_states(ALPHA, root, root / STORE)}
    assert states == {H200: "fresh", H100: "stale", "2 × NVIDIA H200, NVLink NV18": "failed"}


# --- status -------------------------------------------------------------------------------------


def test_status_has_a_row_per_notebook_and_machine(two_machines):
    root = two_machines
    result = CliRunner().invoke(main, ["status", "--json", "-f", str(root / "mkdocs.yml")])
    assert result.exit_code == 1, result.output  # beta is missing
    rows = json.loads(result.stdout)["notebooks"]
    assert [(r["topic"], r["machine"], r["slug"], r["state"]) for r in rows] == [
        ("alpha", H200, H200_SLUG, "fresh"), ("alpha", H100, H100_SLUG, "fresh"), ("beta", None, None, "missing")]
    assert rows[0]["gpu"] == H200 and rows[0]["executed_at"] == "2026-11-26T08:20:15Z"
    assert rows[1]["headline"]["copy"] == 3.0

    text = CliRunner().invoke(main, ["status", "-f", str(root / "mkdocs.yml")]).output.splitlines()
    header, rows, steps = text[0], text[1:4], text[4:]
    assert header.split()[:3] == ["topic", "state", "ran"]
    assert rows[0].split()[:3] == ["alpha", "fresh", "NVIDIA"] and H200 in rows[0]
    assert H100 in rows[1] and "2026-11-25T14:15:16Z" in rows[1]
    assert rows[2].split()[:3] == ["beta", "missing", "-"]
    assert len(steps) == 1 and steps[0].startswith("next:") and "notebooks/beta.py" in steps[0]

    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    write(root, make_record(root, H100, "2026-11-25T14:15:16Z", fresh=False))
    write(root, make_record(root, H200, "2026-11-26T08:20:15Z", fresh=False))
    steps = [line for line in CliRunner().invoke(main, ["status", "-f", str(root / "mkdocs.yml")]).output.splitlines()
             if line.startswith("next:")]
    assert len(steps) == 1 and steps[0].count("notebooks/alpha.py") == 1, steps  # two stale machines, one step
    write(root, make_record(root, H200, "2026-11-26T08:20:15Z"))
    assert [(r.machine, r.state.value) for r in freeze.status(cfg, root)][:2] == [(H200, "fresh"), (H100, "stale")]


def test_execute_runs_only_what_is_not_fresh_on_this_machine(two_machines, monkeypatch, capsys):
    root = two_machines
    ran = []

    def fake_run(path, root_, store, **kwargs):
        ran.append(Path(path).name)
        return execute.ExecutionResult(freeze.relative_path(path, root_), False, "", failure=None)

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(execute, "execute_notebook", fake_run)
    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    for gpu, expected in ((H200, ["beta.py"]), ("NVIDIA A100-SXM4-80GB", ["alpha.py", "beta.py"])):
        ran.clear()
        monkeypatch.setattr(execute, "environment", lambda _root, gpu=gpu: {"device": gpu, "gpus": [gpu]})
        execute.execute_cli(cfg, root, [ALPHA.name and root / ALPHA])
        execute.execute_cli(cfg, root, [root / "notebooks/beta.py"])
        assert ran == expected, gpu
    err = capsys.readouterr().err
    assert f"notebooks/alpha.py: fresh, skipped (on {H200}" in err
    assert "notebooks/alpha.py: missing, executing (on NVIDIA A100-SXM4-80GB)" in err


# --- the primary machine ----------------------------------------------------------------------


def _shown(markdown: str) -> str:
    return markdown.split("**Shown:** the run on ", 1)[1].split(",", 1)[0]


@pytest.mark.parametrize("primary, shown", [(None, H200), ("h100", H100), (H100, H100), (H100_SLUG, H100),
                                            ("NVIDIA H200", H200), ("a100", H200)])
def test_the_page_shows_the_primary_machine(two_machines, primary, shown):
    page = render_topic(ALPHA, STORE, two_machines, files_dir="alpha", primary=primary)
    assert _shown(page.markdown) == shown  # default: the newest; no record of that machine: the newest too
    other = H100 if shown == H200 else H200
    listed = page.markdown.split("**Other machines:** ", 1)[1].split("\n", 1)[0]
    assert listed.startswith(other) and "(fresh)" in listed
    assert ("2026-11-25 14:15:16 UTC" in listed) == (other == H100)
    assert not page.warnings and not page.notes


def test_a_newer_run_under_the_interpreter_does_not_lead_the_page(two_machines):
    root = two_machines
    cpu = dataclasses.replace(make_record(root, H200, "2026-11-27T09:00:00Z"), mode="interpret", gpu=None,
                              gpus=[], machine="CPU (TRITON_INTERPRET=1)")
    write(root, cpu)
    page = render_topic(ALPHA, STORE, root, files_dir="alpha")
    assert _shown(page.markdown) == H200  # the newest GPU record, not the newer correctness run
    page = render_topic(ALPHA, STORE, root, files_dir="alpha", primary="triton_interpret")
    assert _shown(page.markdown) == r"CPU (TRITON\_INTERPRET=1)"  # unless asked for (markdown-escaped)


def test_a_stale_other_machine_is_a_note_not_a_warning(two_machines):
    root = two_machines
    write(root, make_record(root, H100, "2026-11-25T14:15:16Z", fresh=False))
    page = render_topic(ALPHA, STORE, root, files_dir="alpha")
    assert not page.warnings  # the page shows the H200's fresh run
    assert page.notes == [f"notebook notebooks/alpha.py: the record of {H100} is stale; "
                          "run worklog-gen execute notebooks/alpha.py on it"]
    assert "(stale)" in page.markdown.split("**Other machines:** ", 1)[1].split("\n", 1)[0]
    # its column says so, and so does the line under the table: no figure of older code reads as current
    assert "| Result | H200 | H100 (stale) | H100 / H200 | Goal | Measured against |" in page.markdown
    assert f"{H100}, 2026-11-25 (stale: a run of older code);" in page.markdown

    md = kernels_page(TOPICS, STORE, root).markdown
    across = md.split("## Across machines", 1)[1].split("\n## ", 1)[0]
    assert "| [Alpha](topics/alpha.md) | The copy figure | 4.3 TB/s | 3 TB/s (stale) | 0.698× (H100 / H200) |" in across
    scaling = md.split("## What scales with what", 1)[1].split("\n## ", 1)[0]
    assert "| [Alpha](topics/alpha.md) | The copy figure | 0.698× (stale) | memory bandwidth |" in scaling


def test_an_unknown_primary_machine_is_a_config_error_naming_mkdocs_yml(two_machines):
    root = two_machines
    text = (root / "mkdocs.yml").read_text().replace("  - worklog:\n", "  - worklog:\n      primary_machine: H300\n")
    (root / "mkdocs.yml").write_text(text)
    cfg, _ = load_plugin_config(root / "mkdocs.yml")
    assert cfg.primary_machine == "H300"
    notebooks = [t.notebook for t in cfg.topics]
    with pytest.raises(PluginError) as err:
        check_primary_machine(cfg.primary_machine, root / STORE, notebooks, cfg.config_file_path)
    message = str(err.value)
    assert message.startswith(f"{root / 'mkdocs.yml'}: worklog option 'primary_machine': 'H300'")
    assert f"{H100} ({H100_SLUG})" in message and f"{H200} ({H200_SLUG})" in message
    for ok in ("h100", "NVIDIA H200", H100_SLUG, None):
        check_primary_machine(ok, root / STORE, notebooks, "mkdocs.yml")
    shutil.rmtree(root / STORE)
    check_primary_machine("H300", root / STORE, notebooks, "mkdocs.yml")  # nothing frozen yet: nothing to match


# --- side by side ---------------------------------------------------------------------------------


def test_short_machine_names():
    assert short_machine(H100) == "H100" and short_machine(H200) == "H200"
    assert short_machine("2 × NVIDIA H200, NVLink NV18") == "2 × H200"
    assert short_machine("CPU (TRITON_INTERPRET=1)") == "CPU (TRITON_INTERPRET=1)"


def test_the_results_table_has_a_column_per_machine_and_the_ratio(two_machines):
    root = two_machines
    h100 = freeze.load_record(root / STORE, ALPHA, machine=H100)
    h200 = freeze.load_record(root / STORE, ALPHA, machine=H200)
    table = results_table(h100, list(FIGURES[H100]), [h200]).split("\n")
    assert table[2] == "| Result | H100 | H200 | H200 / H100 | Goal | Measured against |"
    assert table[3] == "| --- | ---: | ---: | ---: | --- | --- |"
    assert table[4] == "| The copy figure | 3 TB/s | 4.3 TB/s | 1.433× | — | — |"
    assert table[7] == "| The vs\\_torch figure | 1.000× | 1.100× | 1.100× | ≥ 1×, met | — |"
    assert f"*Measured on {H100}, 2026-11-25 (the run this page shows); {H200}, 2026-11-26;" in table[-1]

    # a goal one machine's run misses and the other's meets: the verdict of each
    missed = dataclasses.replace(h100, headline={**h100.headline, "vs_torch": dataclasses.replace(
        h100.headline["vs_torch"], value=0.9)})
    row = next(line for line in results_table(missed, None, [h200]).split("\n") if "vs\\_torch" in line)
    assert row.endswith("| ≥ 1×: **missed**, met | — |"), row  # in the order of the value columns

    # a goal per run (as the collectives set one per number of GPUs): each goal and verdict in column order
    goals = dataclasses.replace(h100, headline={**h100.headline, "vs_torch": dataclasses.replace(
        h100.headline["vs_torch"], goal=1.2)})
    row = next(line for line in results_table(goals, None, [h200]).split("\n") if "vs\\_torch" in line)
    assert row.endswith("| ≥ 1.2×, **missed**; ≥ 1×, met | — |"), row

    # a label per run (the collectives' "1 → 2 GPUs" and "1 → 4 GPUs"): shared clauses once, then each ending
    def scaled(record, gpus):
        return dataclasses.replace(record, headline={**record.headline, "vs_torch": dataclasses.replace(
            record.headline["vs_torch"], label=f"Scaling efficiency, 1 → {gpus} GPUs")})
    both = "| Scaling efficiency, 1 → 2 GPUs / 1 → 4 GPUs |"
    assert both in results_table(scaled(h100, 2), None, [scaled(h200, 4)])
    assert both in headline_table(scaled(h100, 2), [scaled(h200, 4)])
    assert "| Scaling efficiency, 1 → 2 GPUs |" in results_table(scaled(h100, 2), None, [scaled(h200, 2)])

    single = results_table(h100, list(FIGURES[H100]))  # one machine: as before, no ratio column
    assert "| Result | Value | Goal | Measured against |" in single and " / " not in single.split("\n")[2]

    rows = headline_table(h200, [h100]).split("\n")
    assert rows[0] == "| Figure | H200 | H100 | H100 / H200 | Unit | Description |"
    assert "| The copy figure | 4.3 | 3 | 0.698× | TB/s |  |" in rows


def test_the_page_puts_the_primary_first(two_machines):
    md = render_topic(ALPHA, STORE, two_machines, files_dir="alpha", primary="h100").markdown
    assert "| Result | H100 | H200 | H200 / H100 | Goal | Measured against |" in md
    md = render_topic(ALPHA, STORE, two_machines, files_dir="alpha").markdown
    assert "| Result | H200 | H100 | H100 / H200 | Goal | Measured against |" in md


def test_machine_names_are_escaped_in_tables(project):
    write(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    write(project, make_record(project, "NVIDIA <img src=x onerror=alert(1)> H200 | x", "2026-11-26T08:20:15Z"))
    md = render_topic(ALPHA, STORE, project, files_dir="alpha").markdown + kernels_page(TOPICS, STORE, project).markdown
    assert "<img" not in md and "&lt;img" in md


def test_the_kernels_page_compares_every_headline_across_machines(two_machines):
    md = kernels_page(TOPICS, STORE, two_machines, primary="h100").markdown
    section = md.split("## Across machines", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.split("\n") if line.startswith("|")]
    assert rows[0] == "| Topic | Headline | H100 | H200 | Ratio to the primary |"
    assert "| [Alpha](topics/alpha.md) | The copy figure | 3 TB/s | 4.3 TB/s | 1.433× (H200 / H100) |" in rows
    assert len(rows) == 2 + len(FIGURES[H100])
    assert f"{H100}, 2026-11-25, **fresh**; {H200}, 2026-11-26, **fresh**" in md  # the topic's section


def test_the_scaling_section_classifies_each_headline(two_machines):
    md = kernels_page(TOPICS, STORE, two_machines, primary="h100").markdown
    section = md.split("## What scales with what", 1)[1].split("\n## ", 1)[0]
    assert "### H200 / H100" in section
    assert "1.433× the HBM bandwidth" in section and "1.000× its dense bf16 peak" in section
    rows = {line.split(" | ")[1]: line.split(" | ")[2:] for line in section.split("\n") if line.startswith("| [")}
    assert rows == {"The copy figure": ["1.433×", "memory bandwidth |"],
                    "The matmul figure": ["1.014×", "compute |"],
                    "The attention figure": ["1.250×", "neither |"],
                    "The vs\\_torch figure": ["—", "not classified |"],
                    "The ridge figure": ["—", "not classified |"]}
    assert "Memory bandwidth: 1; compute: 1; neither: 1; not classified: 2 headlines." in section
    # the other way round (the H200 primary), the same kinds
    md = kernels_page(TOPICS, STORE, two_machines).markdown
    assert "### H100 / H200" in md and "| The copy figure | 0.698× | memory bandwidth |" in md


def test_the_scaling_section_without_two_single_gpu_machines(project):
    write(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    md = kernels_page(TOPICS, STORE, project).markdown
    assert "## Across machines" not in md
    assert "No notebook is frozen on two single-GPU machines with known datasheets yet" in md


def test_speed_ratio_and_classification():
    assert speed_ratio(2.0, 1.6, "ms") == pytest.approx(1.25)  # a time: less is faster
    assert speed_ratio(3.0, 4.3, "TB/s") == pytest.approx(4.3 / 3)
    assert speed_ratio(1.0, 1.1, "x") is None and speed_ratio(1.0, 2.0, "FLOP/byte") is None
    assert speed_ratio(0.0, 1.0, "GB/s") is None
    bandwidth, compute = 4800 / 3350, 1.0
    assert classify_scaling(1.40, bandwidth, compute) == "memory bandwidth"
    assert classify_scaling(0.95, bandwidth, compute) == "compute"
    assert classify_scaling(1.20, bandwidth, compute) == "neither"  # between the two
    assert classify_scaling(1.80, bandwidth, compute) == "neither"  # beyond both
    assert classify_scaling(None, bandwidth, compute) == "not classified"


def test_the_kernels_page_sets_headlines_that_topics_share_side_by_side(project):
    """alpha and beta both report "Backward against cuDNN" (×), "Forward, bf16" (TFLOP/s) and a label with
    markup; beta's "Forward, bf16" in ms is another measure, and alpha's own headlines are in no row."""
    write(project, make_record(project, H100, "2026-11-25T14:15:16Z"))
    beta = Path("notebooks/beta.py")
    hashed = source_hash(project / beta, project)
    alpha_record = freeze.notebook_states(ALPHA, project, project / STORE)[0].record
    alpha_record.headline.update({"bwd": Headline(0.8, "x", label="Backward against cuDNN"),
                                  "fwd": Headline(586.0, "TFLOP/s", label="Forward, bf16"),
                                  "odd": Headline(2.0, "ms", label="Odd | <b>bold</b>")})
    write(project, alpha_record)
    headline = {"bwd": Headline(0.761, "x", label="Backward against cuDNN"),
                "fwd": Headline(598.0, "TFLOP/s", label="Forward, bf16"),
                "fwd_ms": Headline(1.2, "ms", label="Forward, bf16"),
                "odd": Headline(1.5, "ms", label="Odd | <b>bold</b>")}
    record = FreezeRecord(notebook=beta.as_posix(), source_hash=hashed.hexdigest, hashes=hashed.parts,
                          executed_at="2026-11-27T10:22:44Z", mode="gpu", gpu=H200, driver="580.1", cuda="13.0",
                          gpus=[H200], headline=headline)
    data = project / "out-beta"
    data.mkdir()
    (data / "headline.json").write_text(json.dumps({n: dataclasses.asdict(h) for n, h in headline.items()}))
    freeze.write_entry(project / STORE, "beta", read_notebook(project / beta), data, record)

    md = kernels_page(TOPICS, STORE, project).markdown
    section = md.split("## Side by side", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.split("\n") if line.startswith("|")]
    assert rows == ["| Headline | [Alpha](topics/alpha.md) | [Beta](topics/beta.md) |",
                    "| --- | ---: | ---: |",
                    "| Backward against cuDNN | 0.800× | 0.761× |",
                    "| Forward, bf16 | 586 TFLOP/s | 598 TFLOP/s |",
                    "| Odd \\| &lt;b&gt;bold&lt;/b&gt; | 2 ms | 1.5 ms |"]
    assert "<b>" not in md  # a label is table text, escaped where it shows


def test_the_kernels_page_has_no_side_by_side_section_without_a_shared_headline(two_machines):
    assert "## Side by side" not in kernels_page(TOPICS, STORE, two_machines).markdown


# --- several GPUs, one notebook each -------------------------------------------------------------


def _lane_project(root: Path) -> list[Path]:
    """alpha (one GPU, last run here in 10 s), beta (no GPU), gamma (one GPU, never run here) and delta
    (two GPUs): what an execute with --jobs sorts into lanes (alpha, gamma) and the rest."""
    text = (root / ALPHA).read_text()
    assert "#     gpus: 0\n" in text
    (root / ALPHA).write_text(text.replace("#     gpus: 0\n", "#     gpus: 1\n", 1))
    (root / "notebooks" / "gamma.py").write_text(text.replace("#     gpus: 0\n", "#     gpus: 1\n", 1))
    (root / "notebooks" / "delta.py").write_text(text.replace("#     gpus: 0\n", "#     gpus: 2\n", 1))
    write(root, dataclasses.replace(make_record(root, H200, "2026-11-26T08:20:15Z"), wall_seconds=10.0))
    paths = [root / "notebooks" / name for name in ("alpha.py", "beta.py", "gamma.py", "delta.py")]
    assert [execute.requirements(p)["gpus"] for p in paths] == [1, 0, 1, 2]
    return paths


def _on_gpus(root: Path, monkeypatch, count: int, visible: str | None = None):
    """:func:`_lane_project` on a machine of ``count`` H200s (``CUDA_VISIBLE_DEVICES`` = ``visible``), not under
    the interpreter: the notebooks and the configuration."""
    paths = _lane_project(root)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    monkeypatch.setattr(execute, "environment", lambda _root: {"device": H200, "gpus": [H200] * count})
    return paths, load_plugin_config(root / "mkdocs.yml")[0]


def test_jobs_run_the_one_gpu_notebooks_side_by_side_and_the_rest_after(project, monkeypatch, capsys):
    import threading

    root, events, lock, both = project, [], threading.Lock(), threading.Barrier(2, timeout=30)
    paths, cfg = _on_gpus(root, monkeypatch, 2, visible="2,3")

    def runner(command, gpu, root_):
        with lock:
            events.append(("start", Path(command[-1]).name, gpu))
        both.wait()  # each lane waits here for the other: one at a time would break the barrier
        with lock:
            events.append(("end", Path(command[-1]).name, gpu))
        return True

    def in_process(path, root_, store, **kwargs):
        events.append(("here", Path(path).name, None))
        return execute.ExecutionResult(freeze.relative_path(path, root_), False, "", failure=None)

    monkeypatch.setattr(execute, "execute_notebook", in_process)
    ok = execute.execute_cli(cfg, root, paths, jobs=4, runner=runner)
    assert not ok  # the stand-in runs in this process failed; the lanes' succeeded
    starts = [(name, gpu) for kind, name, gpu in events if kind == "start"]
    assert [name for name, _ in starts] == ["gamma.py", "alpha.py"]  # never run here first, then longest first
    assert {gpu for _, gpu in starts} == {"2", "3"}  # one lane per GPU this process may use, no more
    assert [kind for kind, *_ in events[:2]] == ["start", "start"]  # side by side
    here = [name for kind, name, _ in events if kind == "here"]
    assert here == ["beta.py", "delta.py"]  # no GPU and two GPUs: after the lanes, in this process, in order
    assert all(kind != "here" for kind, *_ in events[:4])
    assert "--jobs 4: 2 notebook(s) on one GPU each, 2 at a time (GPUs 2, 3)" in capsys.readouterr().err


def test_a_lane_runs_worklog_gen_execute_of_one_notebook_with_its_options(project, monkeypatch):
    root = project
    paths, cfg = _on_gpus(root, monkeypatch, 2)
    commands = []
    ok = execute.execute_cli(cfg, root, paths[:1], jobs=2, force=True, timeout=60, kernel_name="k",
                             runner=lambda command, gpu, root_: commands.append((command, gpu)) or False)
    assert not ok  # a lane that fails fails the command
    assert commands == [([sys.executable, "-m", "worklog_gen", "execute", "-f", str((root / "mkdocs.yml").resolve()),
                          "--timeout", "60", "--kernel", "k", "--force", str(paths[0])], "0")]


def test_jobs_on_one_gpu_run_one_at_a_time_and_say_so(project, monkeypatch, capsys):
    root = project
    paths, cfg = _on_gpus(root, monkeypatch, 1)
    ran = []
    monkeypatch.setattr(execute, "execute_notebook", lambda path, *a, **k: ran.append(Path(path).name) or
                        execute.ExecutionResult(str(path), False, "", failure=None))
    execute.execute_cli(cfg, root, paths[2:3], jobs=2, runner=lambda *a: pytest.fail("no lane on one GPU"))
    assert ran == ["gamma.py"]
    assert "--jobs 2: this machine has 1 GPU to run notebooks side by side on, so they run one at a time" in \
        capsys.readouterr().err


def test_a_lane_whose_child_cannot_start_fails_the_command_and_the_others_go_on(project, monkeypatch, capsys):
    root = project
    paths, cfg = _on_gpus(root, monkeypatch, 2)
    ran = []

    def runner(command, gpu, root_):
        if command[-1].endswith("gamma.py"):
            raise FileNotFoundError(2, "No such file or directory", command[0])
        ran.append(Path(command[-1]).name)
        return True

    assert not execute.execute_cli(cfg, root, [paths[0], paths[2]], jobs=2, runner=runner)
    assert ran == ["alpha.py"]
    assert "error: notebooks/gamma.py: FileNotFoundError" in capsys.readouterr().err


def test_a_childs_lines_come_whole_behind_its_gpu(tmp_path, capsys):
    script = "import os\nprint('first line')\nprint('GPU seen:', os.environ['CUDA_VISIBLE_DEVICES'])\n"
    assert execute._run_child([sys.executable, "-c", script], "5", tmp_path)
    assert capsys.readouterr().err.splitlines() == ["[GPU 5] first line", "[GPU 5] GPU seen: 5"]
    assert not execute._run_child([sys.executable, "-c", "raise SystemExit(1)"], "5", tmp_path)


def test_jobs_auto_gives_each_visible_gpu_a_lane_while_it_has_a_notebook(project, monkeypatch, capsys):
    root = project
    paths, cfg = _on_gpus(root, monkeypatch, 3)
    lanes = {}
    monkeypatch.setattr(execute, "execute_notebook", lambda path, *a, **k:
                        execute.ExecutionResult(str(path), False, "", failure=None))
    execute.execute_cli(cfg, root, paths, jobs="auto", runner=lambda command, gpu, root_:
                        lanes.setdefault(Path(command[-1]).name, gpu) is not None)
    assert sorted(lanes) == ["alpha.py", "gamma.py"] and set(lanes.values()) <= {"0", "1"}
    assert "--jobs auto: 2 notebook(s) on one GPU each, 2 at a time (GPUs 0, 1)" in capsys.readouterr().err


def test_the_command_line_takes_jobs_as_a_number_or_auto(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from worklog_gen.cli import main

    seen = []
    monkeypatch.setattr(execute, "execute_cli", lambda cfg, root, notebooks, **kw: seen.append(kw["jobs"]) or True)
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - worklog\n", encoding="utf-8")
    runner = CliRunner()
    for given in ("auto", "3", None):
        args = ["execute", "-f", str(tmp_path / "mkdocs.yml"), *(["-j", given] if given else [])]
        assert runner.invoke(main, args).exit_code == 0
    assert seen == ["auto", 3, 1]
    for bad in ("0", "-2", "all"):
        result = runner.invoke(main, ["execute", "-f", str(tmp_path / "mkdocs.yml"), "-j", bad])
        assert result.exit_code == 2 and f"'{bad}' is not a whole number of at least 1, nor 'auto'" in result.output
