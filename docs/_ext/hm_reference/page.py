"""The reference page, read from the live definitions: magics registered in a real IPython
shell, the CLI's own parsers, the classes' traits, and ``environment.toml``.

Render it in a clean process (``__main__`` does): some help texts and defaults are read
from the environment when their module is imported (``$HPC_MAGICS_JOBS_DIR``, the profiles
installed on this machine).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import REFRESH_COMMAND
from .markdown import cell, options_table, prose, traits_table, usage
from .python_api import python_section

ENVIRONMENT_TABLE = Path(__file__).with_name("environment.toml")


@functools.cache
def _shell() -> Any:
    """A real IPython shell with hpc_magics' magics registered, as `%load_ext` does."""
    from IPython.core.interactiveshell import InteractiveShell

    from hpc_magics.magics import register

    shell = InteractiveShell.instance()
    register(shell)
    return shell


def _served_magics() -> list[tuple[str, list[str], Any]]:
    """(name, kinds, function) for each hpc_magics magic, in the order the classes are
    registered and, within a class, the order its methods are defined."""
    shell = _shell()
    found: dict[str, tuple[tuple[int, int], list[str], Any]] = {}
    classes = [type(m) for m in shell.magics_manager.registry.values()]
    for kind in ("line", "cell"):
        for name, bound in shell.magics_manager.magics[kind].items():
            owner = type(getattr(bound, "__self__", None))
            if not owner.__module__.startswith("hpc_magics."):
                continue
            function = bound.__func__
            defined = list(vars(owner))  # an inherited magic goes after the class's own
            order = defined.index(function.__name__) if function.__name__ in defined \
                else len(defined)
            place = (classes.index(owner), order)
            found.setdefault(name, (place, [], function))[1].append(kind)
    ordered = sorted(found.items(), key=lambda item: item[1][0])
    return [(name, kinds, function) for name, (_, kinds, function) in ordered]


def _spellings(name: str, kinds: list[str]) -> list[str]:
    return [("%" if kind == "line" else "%%") + name for kind in kinds]


def _parser(function: Any) -> Any:
    """The magic's argument parser, or None for a magic that declares no arguments."""
    parser: Any = getattr(function, "parser", None)
    return parser.built() if hasattr(parser, "built") else parser  # a lazy one: build it


def _description(function: Any) -> str:
    parser = _parser(function)
    return prose(parser.description if parser is not None else function.__doc__)


def magics_section() -> Iterator[str]:
    magics = _served_magics()
    yield "## Magics"
    yield ""
    yield ("`%load_ext hpc_magics` registers them; `%%sbatch?` (any magic with `?`) shows the "
           "same help in the notebook. The sbatch flags are one table, `core/flags.py`; "
           "flags hpc_magics does not know go in the cell as `#SBATCH` lines.")
    yield ""
    yield "| magic | what it does |"
    yield "|---|---|"
    for name, kinds, function in magics:
        summary = _description(function).split("\n\n")[0]
        yield f"| {', '.join(f'`{s}`' for s in _spellings(name, kinds))} | {cell(summary)} |"
    for name, kinds, function in magics:
        parser = _parser(function)
        spellings = _spellings(name, kinds)
        yield ""
        yield "### " + ", ".join(f"`{s}`" for s in spellings)
        yield ""
        yield _description(function)
        if parser is None:
            continue
        yield ""
        yield "```text"
        yield usage(parser, spellings[0])
        yield "```"
        yield ""
        yield from options_table(parser)


def cli_section() -> Iterator[str]:
    from hpc_magics import cli

    yield "## The `hpc-magics` command"
    yield ""
    yield "```text"
    yield usage(cli.build_parser([]), "hpc-magics")
    yield "```"
    yield ""
    yield "| command | what it does |"
    yield "|---|---|"
    for name, (_, summary) in cli.SUBCOMMANDS.items():
        yield f"| `hpc-magics {name}` | {cell(summary)} |"
    for name in cli.SUBCOMMANDS:
        top = cli.build_parser([name])  # imports that subcommand's module only
        subcommands: Any = next(a for a in top._actions if a.dest == "command")
        yield from _command(f"hpc-magics {name}", subcommands.choices[name])


def _command(spelled: str, parser: Any) -> Iterator[str]:
    """One command's section, then one for each of its own actions (``kernel install``)."""
    yield ""
    yield f"### `{spelled}`"
    yield ""
    if parser.description:
        yield prose(parser.description)
        yield ""
    yield "```text"
    yield usage(parser, parser.prog)
    yield "```"
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if len(parser._actions) > 1 + len(actions):  # more than -h
        yield ""
        yield from options_table(parser)
    for action in actions:
        for name, sub in action.choices.items():
            yield from _command(f"{spelled} {name}", sub)


def _unconfigured(dotted: str) -> Any:
    """An instance of the class named ``dotted``, with nothing configured."""
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)()


def configuration_section() -> Iterator[str]:
    kernel = sorted(_registered_magics(), key=lambda m: type(m).__name__)
    yield "## Configuration"
    yield ""
    yield "### In the kernel"
    yield ""
    yield ("In an IPython profile's `ipython_config.py` (e.g. "
           "`~/.ipython/profile_default/ipython_config.py`), or in the notebook with "
           "`%config HpcMagicsKernel.jobs_dir = 'scratch/jobs'`.")
    yield ""
    yield from traits_table(m for m in kernel if type(m).class_own_traits(config=True))
    yield ""
    yield "### In the Jupyter server"
    yield ""
    yield ("In `jupyter_server_config.py` (e.g. `~/.jupyter/jupyter_server_config.py`), or "
           "`--HpcMagicsServer.idle_stop_minutes=60` on the command line.")
    yield ""
    yield from traits_table([_unconfigured("hpc_magics.server.extension.HpcMagicsServer")])
    yield ""
    yield "### In nbconvert"
    yield ""
    yield ("`jupyter nbconvert --to hpc_script --HpcScriptExporter.strict=True NB.ipynb`, or "
           "`jupyter_nbconvert_config.py`. `hpc-magics convert` takes the same choices as "
           "options.")
    yield ""
    yield from traits_table([_unconfigured("hpc_magics.convert.exporter.HpcScriptExporter")])


def _registered_magics() -> list[Any]:
    return [m for m in _shell().magics_manager.registry.values()
            if type(m).__module__.startswith("hpc_magics.")]


def environment_variables() -> list[dict[str, str]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib

    with ENVIRONMENT_TABLE.open("rb") as file:
        rows: list[dict[str, str]] = tomllib.load(file)["variable"]
    return rows


def environment_section() -> Iterator[str]:
    rows = environment_variables()
    yield "## Environment variables"
    yield ""
    yield ("Declared in `docs/_ext/hm_reference/environment.toml`; a test fails when the code "
           "reads an `HPC_MAGICS_*` variable that is not in it.")
    for audience in dict.fromkeys(row["for"] for row in rows):
        yield ""
        yield f"### {audience}"
        yield ""
        yield "| variable | default | meaning | read by |"
        yield "|---|---|---|---|"
        for row in rows:
            if row["for"] == audience:
                yield (f"| `{row['name']}` | {cell(row['default']) or '—'} | "
                       f"{cell(row['meaning'])} | {cell(row['read_by'])} |")


def render() -> str:
    lines = [
        "# hpc_magics reference",
        "",
        f"Generated by `{REFRESH_COMMAND}` from the argument parsers, traits and the "
        "environment table themselves: do not edit it by hand "
        "(`tests/test_reference_current.py` fails when it is stale).",
        "",
        "- [Magics](#magics)",
        "- [Python](#python)",
        "- [The `hpc-magics` command](#the-hpc-magics-command)",
        "- [Configuration](#configuration)",
        "- [Environment variables](#environment-variables)",
        "",
        *magics_section(),
        "",
        *python_section(),
        "",
        *cli_section(),
        "",
        *configuration_section(),
        "",
        *environment_section(),
    ]
    return "\n".join(lines) + "\n"
