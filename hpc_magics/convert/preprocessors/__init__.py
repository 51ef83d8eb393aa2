"""nbconvert preprocessors, one per module, each a thin configurable shell over a pure step
of :mod:`hpc_magics.convert.script`.  They are enabled by default: adding one to an
nbconvert pipeline means wanting it."""

from __future__ import annotations

from .cellfilter import CellFilterPreprocessor
from .display import DisplayStripPreprocessor
from .magics import MagicsPreprocessor
from .progress import ProgressBarPreprocessor

__all__ = [
    "CellFilterPreprocessor",
    "DisplayStripPreprocessor",
    "MagicsPreprocessor",
    "ProgressBarPreprocessor",
]
