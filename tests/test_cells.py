"""kit.cells.import_cells: another notebook's tagged cells, run as a module, at their own lines."""

from __future__ import annotations

import inspect
import traceback

import pytest

from worklog_gen.kit.cells import import_cells
from worklog_gen.kit.cuda import NOTEBOOK_DIR_ENV

FORWARD = '''\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # A forward pass

# %% tags=["hide-input", "forward"] summary="Settings"
SCALE = 3
ran = ["settings"]

# %%
ran.append("untagged")
raise RuntimeError("an untagged cell ran")

# %% tags=["forward"]
def forward(x):
    """x times SCALE."""
    ran.append("forward")
    return x * SCALE


def fails():
    raise ValueError("from the imported cell")


if __name__ == "__main__":
    raise RuntimeError("the importing notebook is not __main__")
'''


@pytest.fixture
def notebooks(tmp_path, monkeypatch):
    (tmp_path / "forward.py").write_text(FORWARD)
    monkeypatch.setenv(NOTEBOOK_DIR_ENV, str(tmp_path))
    return tmp_path


def test_the_tagged_cells_run_in_order_and_no_other(notebooks):
    module = import_cells("forward.py", tag="forward")
    assert module.forward(2) == 6
    assert module.ran == ["settings", "forward"]
    assert module.__name__ == "forward"


def test_functions_read_their_source_and_fail_at_the_notebooks_own_line(notebooks):
    module = import_cells("forward.py", tag="forward")
    assert inspect.getsource(module.forward).startswith("def forward(x):")  # what @triton.jit reads
    with pytest.raises(ValueError) as info:
        module.fails()
    frame = traceback.extract_tb(info.tb)[-1]
    line = FORWARD.splitlines().index('    raise ValueError("from the imported cell")') + 1
    assert (frame.filename, frame.lineno) == (str((notebooks / "forward.py").resolve()), line)


def test_a_missing_tag_or_notebook_is_a_clear_error(notebooks):
    with pytest.raises(ValueError, match=r"forward\.py: no code cell is tagged 'backward'"):
        import_cells("forward.py", tag="backward")
    with pytest.raises(FileNotFoundError, match=r"absent\.py: no such notebook"):
        import_cells("absent.py", tag="forward")
