"""Magic arguments: IPython's ``@magic_arguments`` with the parser built when first used,
the resource flags %%sbatch and %hpc_resources share (a table), and
one parse that turns a bad line into one error naming it and the fix.

IPython builds each magic's parser, and formats its whole help text, when the class is
defined; with sbatch's ~30 flags on several magics that alone was a fifth of what
``%load_ext hpc_magics`` may cost (25 ms, benchmarks/bench_load_ext.py). Here the parser
is built on the first parse, or when ``%%sbatch?`` asks for the help (IPython's inspector
calls a ``getdoc()`` it finds on the object).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import construct_parser, magic_arguments
from IPython.utils.process import arg_split

from ..core.errors import HpcMagicsError, JobFailed
from .lazy import lazy_module

if TYPE_CHECKING:
    from ..core import flags, profiles
else:  # imported on first use: %load_ext stays cheap (see lazy.py)
    flags = lazy_module("hpc_magics.core.flags")
    profiles = lazy_module("hpc_magics.core.profiles")


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
    """Also the one place a magic's error becomes what the user reads: an ``HpcMagicsError``
    is IPython's one-line ``UsageError`` (but the failure of a cell that raised on the node:
    it shows the node's traceback)."""

    def __call__(self, magic: Any) -> Any:
        @functools.wraps(magic)  # its name, its arguments (the parser is built from them)
        def func(*args: Any, **kwargs: Any) -> Any:
            try:
                return magic(*args, **kwargs)
            except HpcMagicsError as error:
                if isinstance(error, JobFailed) and error.shows_node_traceback:
                    raise
                raise UsageError(str(error)) from None

        parser = _LazyParser(func)  # every magic has @argument lines: wraps copied them
        func.parser = parser  # type: ignore[attr-defined]

        def getdoc() -> str:
            parser.built()
            return str(func.__doc__)

        func.getdoc = getdoc  # type: ignore[attr-defined]
        return func


def resource_flags() -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """The resource arguments of %%sbatch and %hpc_resources."""
    return [
        (("--profile",), {"help": "cluster profile: " +
                          ", ".join(sorted(profiles.available_profiles()))}),
        *((flag.spellings, {"help": flag.help}) for flag in flags.SBATCH_FLAGS),
        (("--setup",), {"action": "append", "metavar": "COMMAND",
                        "help": "shell line run before the job (repeatable): 'module load X'"}),
        (("--backend",), {"choices": ["auto", "slurm", "local"],
                          "help": "slurm, local (this machine), or auto (slurm when sbatch "
                                  "exists)"}),
    ]


def values_from_args(args: Any) -> dict[str, Any]:
    """The parsed magic arguments, keyed by request field, as ``resources.updated`` takes them."""
    return flags.flag_values(args) | {"backend": args.backend}


def values_as_given(parser: Any, argv: list[str]) -> list[str]:
    """``--mem -1G`` as ``--mem=-1G``: a word starting with '-' after a flag that takes a
    value is that value, as sbatch takes it, unless it is one of the magic's flags (``-J
    --wait`` still says -J wants a value). argparse read it as an unknown flag and said
    "expected one argument", naming no value; now the value's own check names it."""
    flags = parser._option_string_actions  # argparse has no public table of its options
    takes_value = {spelling for spelling, action in flags.items() if action.nargs is None}
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word in takes_value and (value := next(words, None)) is not None:
            if value.startswith("-") and value.split("=")[0] not in flags:
                word = f"{word}={value}" if word.startswith("--") else word + value
            else:
                out.append(word)
                word = value
        out.append(word)
    return out


def parsed_arguments(magic: Callable[..., Any], line: str) -> Any:
    """The magic's parsed arguments; a bad line is one error naming it and the fix."""
    name = magic.__name__
    sign = "%%" if name == "sbatch" else "%"
    parser = magic.parser.built()  # type: ignore[attr-defined]
    parser.allow_abbrev = False  # sbatch's --gpus is not our --gpus-per-node
    try:
        return parser.parse_args(values_as_given(parser, arg_split(line, strict=True)))
    except ValueError as error:  # shlex: an unclosed quote
        raise UsageError(f"{sign}{name} {line.strip()}: {error}: check the quotes") from None
    except UsageError as error:
        hint = (" (flags hpc_magics does not know go in the cell as #SBATCH lines)"
                if name == "sbatch" else "")
        raise UsageError(f"{sign}{name}: {error}: see {sign}{name}? for its arguments{hint}"
                         ) from None
