"""Which cells run: tags, markdown and raw cells."""

from __future__ import annotations

from pathlib import Path

from hpc_magics.convert.cells import RUN, RUN_AS_IS, SKIP, TEXT, cell_policy

from .conftest import commented, convert, markdown, notebook, raw, run_converted, runs, tagged


def test_policy_is_a_pure_decision_on_type_and_tags() -> None:
    assert cell_policy({"cell_type": "code", "metadata": {}}) == RUN
    assert cell_policy({"cell_type": "code", "metadata": {"tags": ["hpc-skip"]}}) == SKIP
    assert cell_policy({"cell_type": "code", "metadata": {"tags": ["remove_cell"]}}) == SKIP
    assert cell_policy({"cell_type": "code", "metadata": {"tags": ["hpc-keep"]}}) == RUN_AS_IS
    both = {"cell_type": "code", "metadata": {"tags": ["hpc-keep", "hpc-skip"]}}
    assert cell_policy(both) == SKIP
    assert cell_policy({"cell_type": "markdown", "metadata": {"tags": ["hpc-keep"]}}) == TEXT
    assert cell_policy({"cell_type": "raw"}) == TEXT


def test_tags_skip_and_keep_cells(tmp_path: Path) -> None:
    nb = notebook(
        "import matplotlib.pyplot as plt\nvalues = [1, 2, 3]",
        tagged("raise SystemExit('interactive only')", "hpc-skip"),
        tagged("raise SystemExit('removed by nbconvert tag')", "remove_cell"),
        tagged("plt.plot(values)\nplt.title('kept as written')\nplt.show()\n!echo kept-cell",
               "hpc-keep"),
        "plt.plot(values)\nplt.show()\nprint('sum', sum(values))")
    script, result = run_converted(nb, tmp_path)
    assert commented(script, "cell 2 left out (tag hpc-skip)")
    assert commented(script, "cell 3 left out (tag remove_cell)")
    assert "SystemExit" not in script
    assert runs(script, "plt.title('kept as written')") and runs(script, "plt.show()")
    assert runs(script, "'echo kept-cell'"), "magics are translated even in hpc-keep cells"
    assert "sum 6" in result.stdout and "kept-cell" in result.stdout


def test_markdown_becomes_comments_and_raw_never_runs(tmp_path: Path) -> None:
    nb = notebook(markdown("# Analysis\nSome *notes* here."),
                  raw("raise SystemExit('raw cells never run')"), "print('ran')")
    script, result = run_converted(nb, tmp_path)
    assert "# # Analysis\n# Some *notes* here.\n" in script
    assert commented(script, "raise SystemExit('raw cells never run')")
    assert "ran" in result.stdout


def test_cell_numbers_match_the_notebook() -> None:
    script = convert(notebook(markdown("intro"), "a = 1", tagged("b = 2", "hpc-skip"),
                              "c = 3")).script
    assert "# %% cell 2\na = 1" in script and "# %% cell 4\nc = 3" in script


def test_future_imports_move_to_the_top(tmp_path: Path) -> None:
    nb = notebook("x = 1", "from __future__ import annotations\ndef f(a: Undefined) -> None:\n"
                           "    return None\nprint('ok', f.__annotations__['a'])")
    script, result = run_converted(nb, tmp_path)
    assert script.index("from __future__ import annotations") < script.index("import os")
    assert "ok Undefined" in result.stdout
