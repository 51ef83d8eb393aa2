"""IPython's ``@magic_arguments``, with the argument parser built when first used.

IPython builds each magic's parser, and formats its whole help text, when the class is
defined; with sbatch's ~30 flags on three magics that alone was a fifth of what
``%load_ext hpc_magics`` may cost (25 ms, benchmarks/bench_load_ext.py). Here the parser
is built on the first parse, or when ``%%sbatch?`` asks for the help (IPython's inspector
calls a ``getdoc()`` it finds on the object).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import construct_parser, magic_arguments


class _LazyParser:
    """Stands in for the parser until something uses it."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self._func = func
        self._parser: Any = None

    def built(self) -> Any:
        if self._parser is None:
            self._parser = construct_parser(self._func)  # also sets the full help as __doc__
        return self._parser

    def __getattr__(self, name: str) -> Any:
        return getattr(self.built(), name)


class lazy_magic_arguments(magic_arguments):  # spelled as IPython's decorator
    def __call__(self, func: Any) -> Any:
        if not getattr(func, "has_arguments", False):
            func.has_arguments = True
            func.decorators = []
        if self.name is not None:
            func.argcmd_name = self.name
        parser = _LazyParser(func)
        func.parser = parser

        def getdoc() -> str:
            parser.built()
            return str(func.__doc__)

        func.getdoc = getdoc
        return func
