"""What the magics' modules use, imported when first used rather than at ``%load_ext``.

Defining the core's frozen dataclasses (requests, profiles, flags, job scripts) costs
~30 ms; ``%load_ext hpc_magics`` may cost 25 ms in all (benchmarks/bench_load_ext.py).
So the magics' modules name the core's modules through ``lazy_module`` (a stand-in that
imports the module on its first attribute read) and declare their sbatch-flag arguments
through ``arguments_from`` (the flag table is read when the parser is built, on first use).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from IPython.core.magic_arguments import ArgDecorator

Arguments = Sequence[tuple[tuple[str, ...], dict[str, Any]]]


class lazy_module:  # spelled as the function it stands for
    """A stand-in for module ``name`` that imports it when an attribute is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        module = self.__dict__.get("_module")
        if module is None:
            module = self.__dict__["_module"] = importlib.import_module(self._name)
        return getattr(module, attribute)  # never a copy: what tests patch is what is read

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


class arguments_from(ArgDecorator):
    """``@argument`` for a whole table of arguments, read from ``table()`` when the magic's
    parser is built (``lazy_magic_arguments`` builds it on first use)."""

    def __init__(self, table: Callable[[], Arguments]) -> None:
        self.table = table

    def add_to_parser(self, parser: Any, group: Any) -> None:
        target = group if group is not None else parser
        for flags, options in self.table():
            target.add_argument(*flags, **options)
