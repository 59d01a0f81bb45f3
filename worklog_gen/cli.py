"""The ``worklog-gen`` command line.

Thin wiring over plain functions: each command reads the ``worklog`` plugin's options (see
:mod:`worklog_gen.config`) from the ``mkdocs.yml`` of the current folder or the nearest folder
above it, as git finds its repository, unless ``-f`` names one. A command given PATHs of a log
needs no ``mkdocs.yml``; one without finds none and says so in one line (exit 2).

No traceback reaches a user: a problem with the input or the configuration is one line naming
the file, and an unexpected error is one line too (``WORKLOG_GEN_TRACEBACK=1`` shows where it
came from). Exit codes: 0 fine, 1 the log or a notebook has errors, 2 a usage or configuration
problem.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

import click

CONFIG_NAME = "mkdocs.yml"
CONFIG_OPTION = click.option(
    "--config-file",
    "-f",
    "config_file",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="mkdocs.yml whose 'worklog' plugin options to use [default: ./mkdocs.yml or the nearest above].",
)


class UsageProblem(click.ClickException):
    """A problem with how the command was called or configured: one line, exit 2."""

    exit_code = 2


def find_config(config_file: Path | None, *, required: bool = True) -> Path | None:
    """``config_file`` when given (it must exist), else the ``mkdocs.yml`` of the current folder
    or the nearest folder above it; ``None`` when there is none and ``required`` is false.

    Raises:
        UsageProblem: the file named does not exist, or none is found and one is required.
    """
    if config_file is not None:
        if not config_file.is_file():
            raise UsageProblem(f"{config_file}: no such file")
        return config_file
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder / CONFIG_NAME
    if required:
        raise UsageProblem(f"no {CONFIG_NAME} in {here} or above: pass PATH or -f")
    return None


class IsoDate(click.ParamType):
    """A YYYY-MM-DD option, read as a :class:`datetime.date`: text of another form says the
    format, and a date that does not exist (``2026-02-30``) says so."""

    name = "YYYY-MM-DD"

    def convert(self, value, param, ctx) -> dt.date:
        if isinstance(value, dt.date):
            return value
        m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", str(value).strip())
        if m is None:
            self.fail(f"{value!r} is not a date written YYYY-MM-DD", param, ctx)
        try:
            return dt.date(*map(int, m.groups()))
        except ValueError as exc:
            self.fail(f"{value!r} does not exist: {exc}", param, ctx)


def _config(config_file: Path | None, paths: tuple[Path, ...] = (), warned: list[str] | None = None):
    """The plugin options and the project folder: from :func:`find_config` (needed unless PATHs of
    a log are given; then the defaults, relative to the current folder). What MkDocs would warn
    about in the options (an unknown one) is printed as a warning, and kept in ``warned``."""
    from mkdocs.exceptions import PluginError

    from worklog_gen.config import load_plugin_config

    def warn(message: str) -> None:
        click.echo(f"WARNING: {message}", err=True)
        if warned is not None:
            warned.append(message)

    found = find_config(config_file, required=not paths)
    try:
        return load_plugin_config(found if found is not None else Path.cwd() / CONFIG_NAME, on_warning=warn)
    except PluginError as exc:
        raise UsageProblem(str(exc)) from exc


class _Group(click.Group):
    """Turns what a command did not catch into one line: a ``PluginError`` or ``OSError`` (the
    file is in the message), or an unexpected error (its type and message; set
    ``WORKLOG_GEN_TRACEBACK=1`` for the traceback)."""

    def invoke(self, ctx: click.Context):
        from mkdocs.exceptions import PluginError

        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (PluginError, OSError) as exc:
            raise click.ClickException(str(exc)) from exc
        except Exception as exc:
            if os.environ.get("WORKLOG_GEN_TRACEBACK"):
                raise
            raise click.ClickException(f"unexpected {type(exc).__name__}: {exc} (this is a bug in worklog-gen: "
                                       "WORKLOG_GEN_TRACEBACK=1 shows where)") from exc


def _load(targets: list[Path], cfg, config_file: Path | None, root: Path):
    """The log at ``targets`` (:func:`worklog_gen.log.parse.load`), the files the ``exclude`` option
    leaves out of the worklog folder (of the project in ``root``) not read, links to the
    repository's files found as the build finds them (``repo_url`` of ``config_file``), a missing
    or unreadable path as a one-line error naming it rather than a traceback.

    Raises:
        UsageProblem: a path does not exist (exit 2).
        click.ClickException: a file cannot be read (exit 1).
    """
    from worklog_gen.config import exclusion, read_mkdocs_yml
    from worklog_gen.log.local_files import Repository
    from worklog_gen.log.parse import load

    yml = Path(config_file) if config_file else root / CONFIG_NAME
    repo_url = read_mkdocs_yml(yml).get("repo_url") if yml.is_file() else None
    try:
        return load(targets, date_order=cfg.date_order, year=cfg.year, exclude=exclusion(cfg, root),
                    repository=Repository.of(repo_url if isinstance(repo_url, str) else None, root))
    except FileNotFoundError as exc:
        raise UsageProblem(f"{exc} (worklog_dir '{cfg.worklog_dir}' of {config_file}, or the PATH given)") from exc
    except OSError as exc:
        raise click.ClickException(f"cannot read {exc.filename or targets[0]}: {exc.strerror or exc}") from exc


def _worklog_paths(paths: tuple[Path, ...], cfg, root: Path) -> list[Path]:
    """The PATHs given, else the configured worklog, relative to the current folder
    when it lies below it (messages and the export then name ``worklog/log.md:12``)."""
    if paths:
        return list(paths)
    configured = root / cfg.worklog_dir
    try:
        return [configured.relative_to(Path.cwd())]
    except ValueError:
        return [configured]


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="worklog-gen", prog_name="worklog-gen")  # importlib.metadata's version
def main() -> None:
    """Turn a learning log (T-minus entries, progress-log headings, dated notes,
    posts) into a MkDocs-Material site, and run, freeze and render its GPU-kernel
    notebooks."""


@main.command()
@click.argument("folder", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--target", "target", type=IsoDate(),
              help="The target date the log counts down to, YYYY-MM-DD (asked when not given).")
@click.option("--name", "site_name", help="The site's name [default: the folder's name].")
def init(folder: Path, target: dt.date | None, site_name: str | None) -> None:
    """Make a new learning-log site in FOLDER (default: here) that builds as it stands.

    Writes mkdocs.yml (every option commented), docs/index.md, worklog/log.md (today's entry,
    counted down to the target date), notebooks/first_kernel.py (a starter Triton topic),
    .gitignore and a GitHub Pages workflow. Overwrites nothing. Then:
    cd FOLDER && mkdocs build --strict (or mkdocs serve).
    """
    from worklog_gen import scaffold

    if target is None:
        target = click.prompt("Target date you are counting down to (YYYY-MM-DD)",
                              type=IsoDate())
    try:
        made = scaffold.create(folder, target, site_name=site_name)
    except (scaffold.ProjectExists, ValueError) as exc:
        raise UsageProblem(str(exc)) from exc
    except OSError as exc:  # a read-only folder, a full disk: create left nothing behind
        raise click.ClickException(f"cannot write {exc.filename or folder}: {exc.strerror or exc}; "
                                   "init wrote nothing") from exc
    for rel in made.files:
        click.echo(f"wrote {folder / rel}")
    where = "" if folder == Path(".") else f"cd {folder} && "
    click.echo(f"first entry: {made.header}, today's, in {folder / 'worklog' / 'log.md'}: write today's notes "
               f"under it\nnext: {where}mkdocs serve   (or mkdocs build --strict); from tomorrow on, "
               "worklog-gen new adds each day's header")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="json", show_default=True)
@CONFIG_OPTION
def export(paths: tuple[Path, ...], fmt: str, config_file: Path) -> None:
    """Print the parsed log as JSON, or as one clean markdown file. Exits 1, after printing,
    when the log has errors (listed on stderr).

    With no PATH, reads the worklog configured in ./mkdocs.yml.
    """
    from worklog_gen.site import export as exporter

    cfg, root = _config(config_file, paths)
    log = _load(_worklog_paths(paths, cfg, root), cfg, config_file, root)
    for diag in log.diagnostics:
        click.echo(str(diag), err=True)
    if fmt == "json":
        click.echo(json.dumps(exporter.to_json(log, cfg), indent=2, ensure_ascii=False))
    else:
        click.echo(exporter.to_markdown(log), nl=False)
    sys.exit(1 if any(d.severity == "error" for d in log.diagnostics) else 0)


@main.command()
@click.argument("path", required=False, type=click.Path(dir_okay=True, path_type=Path))
@click.option("--date", "day", type=IsoDate(), help="Entry date (default: today).")
@CONFIG_OPTION
def new(path: Path | None, day: dt.date | None, config_file: Path) -> None:
    """Append today's entry header to the log, as the log writes one: a T-minus header with its
    countdown to the target date, the next progress heading (Day N + 1), or the next date line.

    PATH is the log file; with none, the configured worklog (the newest file in a folder).
    """
    from worklog_gen.config import exclusion
    from worklog_gen.log.authoring import append_entry

    cfg, root = _config(config_file, (path,) if path else ())
    target = path or root / cfg.worklog_dir
    date = day or dt.date.today()
    try:
        file, header = append_entry(target, date, date_order=cfg.date_order, exclude=exclusion(cfg, root))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    except FileNotFoundError as exc:
        raise UsageProblem(f"{target}: no such file or folder") from exc
    except OSError as exc:
        raise click.ClickException(f"cannot write {exc.filename or target}: {exc.strerror or exc}") from exc
    click.echo(f"{file}: added {header or date.isoformat()}")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--fix", is_flag=True, help="Write the repairs of damaged text back into the files (atomically).")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the repairs as a unified diff and write nothing, with or without --fix.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every diagnostic with its severity and code.")
@CONFIG_OPTION
def check(paths: tuple[Path, ...], fix: bool, show_diff: bool, as_json: bool, config_file: Path) -> None:
    """Lint the log: invalid dates, countdowns off the target date, duplicate or
    out-of-order days, damaged text, refused files; notes on style and habits under their
    own heading. Exits 1 on errors.

    With --fix, the repairs of damaged text (mojibake, backwards links, line ends, encoding)
    are written back, each file atomically and only when the repair is lossless, and the diff
    is printed; --diff is a dry run: it prints the diff and the diagnostics and writes nothing,
    with or without --fix. --fix holds the lock `new` takes, and leaves a file that changed
    after it read it as it is (exit 1; run it again).
    """
    from contextlib import nullcontext

    from filelock import Timeout

    from worklog_gen.log import fix as fixer
    from worklog_gen.log.authoring import LOCK_TIMEOUT_S, log_lock
    from worklog_gen.log.lint import lint, report, summary

    cfg, root = _config(config_file, paths)
    targets = _worklog_paths(paths, cfg, root)
    writing = fix and not show_diff  # --diff: a dry run
    result: dict = {}
    changed = False  # a file changed while --fix ran: left as it is, exit 1
    try:
        # ``new`` takes the same lock: it waits until the repairs are in place, then appends.
        with log_lock(targets) if writing else nullcontext():
            log = _load(targets, cfg, config_file, root)
            if fix or show_diff:
                fixes = _plan_fixes(fixer, log)
                for f in fixes:
                    if f.refused:
                        click.echo(f"{f.name}: not fixed: {f.refused}", err=True)
                    elif not as_json:
                        click.echo(f.diff(), nl=False)
                    if writing and not f.refused:
                        try:
                            fixer.apply(f)
                        except fixer.FileChanged:  # an editor saved it meanwhile: its text is kept
                            f.refused = "it changed while check --fix ran: nothing was written; run check --fix again"
                            changed = True
                            click.echo(f"{f.name}: not fixed: {f.refused}", err=True)
                        except OSError as exc:  # the file or its folder became read-only meanwhile
                            f.refused = f"cannot write it: {exc.strerror or exc}"
                            click.echo(f"{f.name}: not fixed: {f.refused}", err=True)
                result = {"fixed" if writing else "fixable": [f.name for f in fixes if not f.refused],
                          "refused": [{"path": f.name, "why": f.refused} for f in fixes if f.refused]}
    except Timeout as exc:
        raise click.ClickException(f"{', '.join(map(str, targets))}: another worklog-gen new or check --fix held "
                                   f"the log for {LOCK_TIMEOUT_S} s; nothing was written, try again") from exc
    if writing:
        if not as_json:
            click.echo(f"fixed {len(result['fixed'])} file(s)" + (f", refused {len(result['refused'])}"
                                                                  if result["refused"] else ""), err=True)
        log = _load(targets, cfg, config_file, root)
    diagnostics = lint(log)
    counts = summary(diagnostics)
    if as_json:
        click.echo(json.dumps({"diagnostics": [{"path": d.path, "line": d.line, "severity": d.severity.value,
                                                "code": d.code.value, "message": d.message} for d in diagnostics],
                               "summary": counts, **result}, indent=2, ensure_ascii=False))
    elif text := report(diagnostics):
        click.echo(text)
    click.echo(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s)", err=True)
    sys.exit(1 if counts["error"] or changed else 0)


def _plan_fixes(fixer, log):
    """:func:`worklog_gen.log.fix.plan`, a file it cannot read as a one-line error."""
    try:
        return fixer.plan(log)
    except OSError as exc:
        raise click.ClickException(f"cannot read {exc.filename}: {exc.strerror or exc}") from exc


class _Jobs(click.ParamType):
    """``--jobs``: a whole number of at least 1, or ``auto`` (one lane per GPU, as ``pytest -n auto``
    takes one worker per core)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if value == "auto":
            return value
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            self.fail(f"{value!r} is not a whole number of at least 1, nor 'auto'", param, ctx)
        return number


JOBS = _Jobs()


@main.command()
@click.argument("notebooks", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Execute even notebooks whose frozen result is fresh.")
@click.option("--timeout", default=1800, show_default=True, help="Per-cell timeout in seconds.")
@click.option("--kernel", "kernel_name", default="python3", show_default=True, help="Jupyter kernel to run them in.")
@click.option("--jobs", "-j", default="1", show_default=True, type=JOBS, metavar="N|auto",
              help="On a machine of several GPUs, run up to this many one-GPU notebooks at once, each alone "
                   "on a GPU of its own ('auto': one per GPU); notebooks on several GPUs run after them.")
@CONFIG_OPTION
def execute(notebooks: tuple[Path, ...], force: bool, timeout: int, kernel_name: str, jobs: int | str,
            config_file: Path) -> None:
    """Execute stale or missing topic notebooks and freeze their results.

    With no NOTEBOOK, every configured topic notebook. A failing cell stops its
    notebook, prints the cell and traceback, keeps the previous frozen result and
    makes the command exit 1.
    """
    from worklog_gen.freeze.execute import execute_cli

    cfg, root = _config(config_file)
    ok = execute_cli(cfg, root, list(notebooks), force=force, timeout=timeout, kernel_name=kernel_name, jobs=jobs)
    sys.exit(0 if ok else 1)


@main.command()
@click.option("--out", "out", default="build/generated", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write docs/, nav.yml and mkdocs.yml into: a new or empty one, or one it wrote before.")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings, as `mkdocs build --strict` fails on them.")
@CONFIG_OPTION
def generate(out: Path, strict: bool, config_file: Path) -> None:
    """Write every page the plugin generates as plain files, for any engine.

    OUT/docs/ gets the project's docs/ plus the worklog, topic and Kernels pages, their
    images and data, and feed.xml; OUT/nav.yml the nav; OUT/mkdocs.yml the project's
    configuration without the plugin. Then: `zensical build -f OUT/mkdocs.yml`. OUT must be a
    folder of its own: not the project's folder or one above it, nor inside its docs or worklog
    folders, and new, empty or written by an earlier run (exit 2 otherwise).
    """
    from mkdocs.exceptions import PluginError

    from worklog_gen.site import generate as generator

    config_file = find_config(config_file)
    warned: list[str] = []
    cfg, root = _config(config_file, warned=warned)
    data = generator.read_config(config_file)
    docs_dir = root / data.get("docs_dir", "docs")
    try:
        generator.check_out(out, cfg, root, docs_dir)  # before the work, which takes a while
    except generator.OutFolderRefused as exc:
        raise UsageProblem(str(exc)) from exc
    try:
        site = generator.generate(cfg, root, site_name=data.get("site_name") or "", site_url=data.get("site_url"),
                                  site_author=data.get("site_author"),
                                  use_directory_urls=data.get("use_directory_urls", True),
                                  build_date=_build_date(), repo_url=data.get("repo_url"), docs_dir=docs_dir,
                                  home_at_root=not generator.has_home(
                                      p.relative_to(docs_dir).as_posix() for p in docs_dir.glob("*.md")))
        written = generator.write_site(site, out, cfg, docs_dir=docs_dir, mkdocs_yml=config_file)
    except PluginError as exc:
        raise click.ClickException(str(exc)) from exc
    for message in site.messages:
        click.echo(f"{message.level.value.upper()}: {message.text}", err=True)
    click.echo(f"{len(site.files)} file(s) generated; config: {written}", err=True)
    if strict and (site.warnings() or warned):
        click.echo(f"Aborted with {len(site.warnings()) + len(warned)} warning(s) in strict mode.", err=True)
        sys.exit(1)


def _build_date() -> dt.date:
    """Today, or ``SOURCE_DATE_EPOCH`` when set, as MkDocs' ``get_build_datetime`` reads it."""
    from mkdocs.utils import get_build_datetime

    return get_build_datetime().date()


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@CONFIG_OPTION
def status(as_json: bool, config_file: Path) -> None:
    """Report each topic notebook as fresh, stale, missing or failed on each machine it has a
    frozen result of (one row per notebook and machine). Exits 1 when any is not fresh (so a CI
    step can use it)."""
    from worklog_gen.freeze import store as freeze
    from worklog_gen.freeze.record import NotebookState

    cfg, root = _config(config_file)
    rows = freeze.status(cfg, root)
    if as_json:
        click.echo(json.dumps({"notebooks": [r.to_json() for r in rows]}, indent=2))
    elif not rows:
        click.echo(f"no topic names a notebook in {find_config(config_file)}: nothing to execute")
    else:
        widths = dict(topic_width=max([20, *(len(r.topic) for r in rows)]),
                      gpu_width=max([24, *(len(r.gpu or "-") for r in rows)]))
        click.echo(f"{'topic':<{widths['topic_width']}} {'state':<8} {'ran on':<{widths['gpu_width']}} "
                   f"{'executed at':<21} notebook")
        for r in rows:
            click.echo(r.summary(**widths))
        for step in _next_steps(rows, cfg):
            click.echo(f"next: {step}")
    sys.exit(0 if all(r.state is NotebookState.FRESH for r in rows) else 1)


def _next_steps(rows, cfg) -> list[str]:
    """What to run for the rows of ``status`` that are not fresh: ``execute`` for the notebooks
    that exist (after fixing the cell that failed, for a failed one), then commit the store."""
    from worklog_gen.freeze.record import NotebookState

    # a notebook has a row per machine: each is named once, in order
    steps = list(dict.fromkeys(f"topic '{r.topic}': {r.path} is not found; fix its 'notebook' in mkdocs.yml"
                               for r in rows if not r.source_exists))
    failed = list(dict.fromkeys(r.path for r in rows if r.source_exists and r.state is NotebookState.FAILED))
    if failed:
        steps.append(f"fix the cell that failed in {', '.join(failed)} (above), then execute it as below")
    run = list(dict.fromkeys(r.path for r in rows if r.source_exists and r.state is not NotebookState.FRESH))
    if run:
        steps.append(f"worklog-gen execute {' '.join(run)}   (on a GPU; TRITON_INTERPRET=1 worklog-gen execute "
                     f"... on a CPU checks correctness only), then commit {cfg.freeze_dir}/")
    return steps
