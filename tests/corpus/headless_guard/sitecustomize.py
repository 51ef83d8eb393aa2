"""Loaded (through PYTHONPATH) by both runs of a corpus notebook: the real kernel and the
converted script.

Both runs: unseeded random numbers get one fixed seed, so that values drawn with
``np.random.default_rng()`` or ``random.random()`` can be compared between the two runs.
Script run only (``HPC_CORPUS_GUARD=1``): everything that would open a window, a viewer or a
browser, or show output in a notebook, raises instead, so a display the converter left in
fails the run.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

SEED = 0
GUARD = os.environ.get("HPC_CORPUS_GUARD") == "1"


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"headless guard: the converted script called {what}")
    return refuse


def _seed_random(module: ModuleType) -> None:
    module.seed(SEED)


def _seed_numpy(module: ModuleType) -> None:
    module.seed(SEED)
    unseeded = module.default_rng

    def default_rng(seed: Any = None) -> Any:
        return unseeded(SEED if seed is None else seed)

    module.default_rng = default_rng  # type: ignore[attr-defined]


def _seed_torch(module: ModuleType) -> None:
    module.manual_seed(SEED)


def _guard_pyplot(module: ModuleType) -> None:
    module.show = _refuse("matplotlib.pyplot.show")  # type: ignore[attr-defined]


def _guard_figure(module: ModuleType) -> None:
    module.Figure.show = _refuse("Figure.show")


def _guard_display(module: ModuleType) -> None:
    for name in ("display", "clear_output", "update_display"):
        if hasattr(module, name):
            setattr(module, name, _refuse(f"IPython {name}"))


def _guard_pil(module: ModuleType) -> None:
    module.Image.show = _refuse("PIL Image.show")


def _guard_webbrowser(module: ModuleType) -> None:
    for name in ("open", "open_new", "open_new_tab"):
        setattr(module, name, _refuse(f"webbrowser.{name}"))


AFTER_IMPORT: dict[str, Callable[[ModuleType], None]] = {
    "random": _seed_random, "numpy.random": _seed_numpy, "torch": _seed_torch}
if GUARD:
    AFTER_IMPORT.update({
        "matplotlib.pyplot": _guard_pyplot, "matplotlib.figure": _guard_figure,
        "IPython.core.display_functions": _guard_display, "IPython.display": _guard_display,
        "PIL.Image": _guard_pil, "webbrowser": _guard_webbrowser})


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Runs AFTER_IMPORT[name] once the module ``name`` has been executed."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in AFTER_IMPORT:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        execute = spec.loader.exec_module

        def execute_then_patch(module: ModuleType) -> None:
            execute(module)
            AFTER_IMPORT[fullname](module)

        spec.loader.exec_module = execute_then_patch  # type: ignore[method-assign]
        return spec


for _name in [n for n in AFTER_IMPORT if n in sys.modules]:
    AFTER_IMPORT[_name](sys.modules[_name])
sys.meta_path.insert(0, _PatchAfterImport())
