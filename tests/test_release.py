"""The package as a release ships it, as the release workflow checks it
(``.github/workflows/release.yml``): ``python -m build`` makes the sdist and the wheel, both carry
the site's static assets and ``init``'s templates, ``twine check`` passes, and the wheel installed
alone in a fresh virtual environment outside this repository makes a stranger's site with
``worklog-gen init`` that builds with ``mkdocs build --strict``.

Select these tests with ``-m release``. The build runs in pip's isolated environment, as a
release's does (setuptools and setuptools-scm from the package index, so it needs the network
or pip's cache); the wheel goes into a virtual environment that sees this environment's packages
(``--system-site-packages``) with ``--no-deps``, so nothing heavy is downloaded, and the tests
check that ``worklog_gen`` is then imported from the virtual environment, not from here.
About 15 s on a 2-core machine.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DATA = ("worklog_gen/site/static/", "worklog_gen/templates/")
"""The folders of package data: what every user's site carries, and what ``init`` writes."""
LEFT_OUT = ("notebooks/", "docs/", "worklog/", "tests/", "benchmarks/", "scripts/", ".ci/", ".github/")
"""This repository's own site, tests and tools: MANIFEST.in prunes them from the sdist."""
SDIST_LIMIT = 1_500_000
"""Bytes. The sdist is about 0.85 MB, nearly all of it the vendored Vega and KaTeX; with the
freeze store and screenshots it was 2.2 MB."""
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
ENV["NO_MKDOCS_2_WARNING"] = "1"  # Material's documented switch for its end-of-life banner
"""Subprocesses see no PYTHONPATH, so nothing is imported from this checkout by accident."""

pytestmark = [pytest.mark.release, pytest.mark.xdist_group("release")]
"""One worker for the module: two builds at once in one source tree race on its build folders
(a worker's sdist lost a file the other's had just moved), and one build serves every test."""


def run(*args, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run a command (``env``: variables to add); fail the test with its output if it exits non-zero."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env={**ENV, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))}\n{done.stdout}\n{done.stderr}"
    return done


def package_data() -> list[str]:
    """The package data files git tracks (what a release carries)."""
    files = run("git", "ls-files", "--", *PACKAGE_DATA).stdout.split()
    assert any(f.endswith("charts.js") for f in files) and any(f.endswith("publish.yml") for f in files)
    return files


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel, built by ``python -m build`` (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    egg_info = REPO / "worklog_gen.egg-info"
    had_egg_info = egg_info.exists()
    try:
        run(sys.executable, "-m", "build", "--outdir", out, REPO)
    finally:
        if not had_egg_info:  # the sdist's build leaves its metadata in the source tree
            shutil.rmtree(egg_info, ignore_errors=True)
    built = {"sdist": list(out.glob("*.tar.gz")), "wheel": list(out.glob("*.whl"))}
    assert all(len(files) == 1 for files in built.values()), built
    return {kind: files[0] for kind, files in built.items()}


def test_the_sdist_and_the_wheel_carry_the_static_assets_and_the_init_templates(dist):
    wheel = set(zipfile.ZipFile(dist["wheel"]).namelist())
    with tarfile.open(dist["sdist"]) as sdist:
        top = sdist.getnames()[0].split("/")[0]  # worklog_gen-VERSION/
        in_sdist = {name.removeprefix(f"{top}/") for name in sdist.getnames()}
    for rel in package_data():
        assert rel in wheel, f"the wheel lacks {rel}"
        assert rel in in_sdist, f"the sdist lacks {rel}"
    assert {"README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml", "PKG-INFO"} <= in_sdist
    # the licence text travels with the wheel too (PEP 639: .dist-info/licenses/)
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in wheel), sorted(wheel)[-8:]
    assert not [name for name in in_sdist if name.startswith(LEFT_OUT)]
    assert dist["sdist"].stat().st_size < SDIST_LIMIT, f"{dist['sdist'].stat().st_size} bytes"


def test_twine_check_passes(dist):
    done = run(sys.executable, "-m", "twine", "check", "--strict", dist["sdist"], dist["wheel"])
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_alone_builds_a_strangers_site(dist, tmp_path):
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--system-site-packages", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", dist["wheel"])
    version = dist["wheel"].name.split("-")[1]
    where = run(python, "-c", "import importlib.metadata as m, worklog_gen;"
                "print(worklog_gen.__file__); print(m.version('worklog-gen')); print(worklog_gen.__version__)",
                cwd=tmp_path).stdout.split()
    assert Path(where[0]).is_relative_to(venv), f"worklog_gen imported from {where[0]}, not the venv"
    assert where[1:] == [version, version]
    assert run(venv / "bin" / "worklog-gen", "--version").stdout.strip() == f"worklog-gen, version {version}"

    target = dt.date.today() + dt.timedelta(days=100)
    run(venv / "bin" / "worklog-gen", "init", "mylog", "--target", target.isoformat(), cwd=tmp_path)
    project = tmp_path / "mylog"
    # nbconvert's templates are data files of this environment (sys.prefix/share/jupyter), and a venv's
    # Jupyter path names only its own prefix: the dependencies borrowed, their data named too
    run(python, "-m", "mkdocs", "build", "--strict", cwd=project,
        env={"JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter")})
    site = project / "site"
    today = dt.date.today()
    for page in ("worklog/index.html", f"worklog/{today.isoformat()}/index.html", f"worklog/{today.year}/index.html",
                 "worklog/reading-list/index.html", "worklog/tasks/index.html", "topics/first-kernel/index.html",
                 "kernels/index.html", "feed.xml", "assets/worklog-gen/charts.js", "assets/worklog-gen/worklog.css"):
        assert (site / page).is_file(), page
    assert f"T - {(target - today).days}" in (site / f"worklog/{today.isoformat()}/index.html").read_text()
    # a wheel from a file: a release pins itself, a development build falls back to PyPI's latest
    workflow = (project / ".github/workflows/publish.yml").read_text()
    released = ".dev" not in version and "+" not in version
    assert f'pip install "worklog-gen{f"=={version}" if released else ""}"' in workflow
