"""``interpreted.definitions``: what the kernel tests' child runs of a notebook."""

from __future__ import annotations

from interpreted import definitions

NOTEBOOK = '''\
import math
try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:
    TensorDescriptor = None
CPU = True
if CPU:
    SIZES = [3, 5]
    print("CPU mode")
else:
    SIZES = [4096]


def launch(n):
    return math.sqrt(n)


class Shape:
    rows: int = 2


checked = [launch(n) for n in SIZES]
for n in SIZES:
    assert launch(n) > 99, "the notebook's own check: left to test_notebooks"
with open(__file__) as f:
    text = f.read()
display(checked)
if CPU:
    assert False
'''


def test_definitions_keep_what_defines_names_and_leave_out_checks_loops_and_displays():
    ns = {"display": None}
    exec(compile(definitions(NOTEBOOK), "notebook.py", "exec"), ns)
    assert ns["SIZES"] == [3, 5] and ns["launch"](4) == 2.0 and ns["Shape"].rows == 2
    assert ns["checked"] == [3 ** 0.5, 5 ** 0.5]  # an assignment runs, whatever it calls
    assert "TensorDescriptor" in ns and "n" not in ns and "text" not in ns


def test_definitions_keep_the_notebooks_line_numbers():
    tree = definitions(NOTEBOOK)
    fn = next(node for node in tree.body if getattr(node, "name", None) == "launch")
    assert NOTEBOOK.splitlines()[fn.lineno - 1] == "def launch(n):"


def test_an_assignment_a_test_leaves_out_does_not_run():
    ns = {"display": None}
    exec(compile(definitions(NOTEBOOK, frozenset({"checked"})), "notebook.py", "exec"), ns)
    assert "checked" not in ns and ns["SIZES"] == [3, 5]
