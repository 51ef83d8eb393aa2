"""Translate IPython magics, ``!cmd`` and ``obj?`` into plain Python."""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..script import translate_cells


class MagicsPreprocessor(Preprocessor):
    """See :mod:`hpc_magics.convert.magics` for what each magic becomes and why.

    The helpers the translated cells need are listed in ``resources["hpc_magics"]["needs"]``.
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        needs: set[str] = set(resources.get("hpc_magics", {}).get("needs", ()))
        translate_cells(nb.cells, needs)
        resources.setdefault("hpc_magics", {})["needs"] = sorted(needs)
        return nb, resources
