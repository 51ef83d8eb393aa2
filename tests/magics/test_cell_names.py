"""What a cell reads (shipped) and binds (brought back), as ``shipping/analysis.py`` says."""

from __future__ import annotations

from hpc_magics.shipping.analysis import analyse


def test_a_deleted_name_is_not_a_result() -> None:
    assert analyse("del x").assigned == ()
    assert analyse("x = 1\ndel x").assigned == ("x",)  # bound by the cell first: as before


def test_names_bound_in_the_module_namespace_are_results() -> None:
    names = analyse("import os.path\nfor i in range(3):\n    total = i\n"
                    "def f():\n    global g\n    g = 1\n    local = 2\n")
    assert names.assigned == ("os", "i", "total", "f", "g")
    assert "local" not in names.assigned and "local" not in names.free
