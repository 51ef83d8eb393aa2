"""Leave out the cells tagged to be left out of the batch job."""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Set, Unicode

from ..cells import SKIP_TAGS, cell_policy
from ..script import skip_cells


class CellFilterPreprocessor(Preprocessor):
    """Cells tagged ``hpc-skip`` (or nbconvert's ``remove_cell``) become empty raw cells."""

    enabled = Bool(True, help="Run this step; on by default, since adding it to a pipeline "
                   "means wanting it.").tag(config=True)
    skip_tags = Set(
        Unicode(), default_value=set(SKIP_TAGS), help="Tags of code cells the batch job leaves out."
    ).tag(config=True)

    def keeps(self, cell: Any) -> bool:
        """The pure decision: does this cell stay in the job?"""
        return cell_policy(cell, self.skip_tags, ()) != "skip"

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        cells = list(nb.cells)
        skip_cells(cells, self.skip_tags)
        from nbformat import from_dict

        nb.cells = [from_dict(c) for c in cells]
        return nb, resources
