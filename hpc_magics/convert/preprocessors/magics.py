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

    enabled = Bool(True, help="Run this step; on by default, since adding it to a pipeline "
                   "means wanting it.").tag(config=True)
    strict = Bool(
        False,
        help="Refuse a notebook with a cell that is not Python (else: keep it as a comment, "
        "with a warning). The exporter's own strict setting also turns this on.",
    ).tag(config=True)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        state = resources.setdefault("hpc_magics", {})
        needs: set[str] = set(state.get("needs", ()))
        warnings: list[str] = []
        strict = self.strict or bool(state.get("strict"))
        translate_cells(nb.cells, needs, strict=strict, warnings=warnings)
        for warning in warnings:
            self.log.warning("%s", warning)
        state["needs"] = sorted(needs)
        state["warnings"] = warnings
        return nb, resources
