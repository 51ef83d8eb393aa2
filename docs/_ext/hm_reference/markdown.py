"""Markdown for an argparse parser and for a class's configurable traits."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Iterable
from typing import Any

# Wide enough for the long usage lines, fixed so the page does not depend on the terminal.
USAGE_WIDTH = 92


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def prose(docstring: str | None) -> str:
    """A docstring as Markdown: dedented, reST's ``code`` and ``Example::`` made Markdown's."""
    text = inspect.cleandoc(docstring or "")
    return text.replace("``", "`").replace("::\n", ":\n")


def usage(parser: argparse.ArgumentParser, prog: str) -> str:
    """The usage line as argparse writes it, without its "usage: " prefix."""
    formatter = argparse.HelpFormatter(prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups,
                        prefix="")
    return formatter.format_help().strip()


def _spelling(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    value = formatter._format_args(action, action.dest if not action.option_strings
                                   else action.dest.upper())  # argparse's own metavars
    if not action.option_strings:  # a positional argument
        return value
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    return ", ".join(action.option_strings) + " " + value


def _notes(action: argparse.Action, help_text: str) -> list[str]:
    """What the help text does not say already: repeatable, default, choices."""
    notes = []
    if action.choices is not None and action.metavar is not None:  # else {a,b} shows them
        notes.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    if isinstance(action, argparse._AppendAction) and "repeatable" not in help_text:
        notes.append("repeatable")
    takes_value = action.nargs != 0
    if (takes_value and action.default not in (None, argparse.SUPPRESS)
            and "default" not in help_text):
        notes.append(f"default `{action.default}`")
    return notes


def options_table(parser: argparse.ArgumentParser) -> list[str]:
    """One row per argument: how it is spelled, and its help, choices and default."""
    formatter = argparse.HelpFormatter(parser.prog)
    rows = ["| argument | meaning |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        meaning = formatter._expand_help(action) if action.help else ""  # %% → %, %(default)s
        notes = _notes(action, meaning)
        if notes:
            meaning = f"{meaning} ({'; '.join(notes)})" if meaning else "; ".join(notes)
        rows.append(f"| `{_spelling(action, formatter)}` | {cell(meaning) or '—'} |")
    return rows


def _default_text(configurable: Any, name: str) -> str:
    value = configurable.trait_defaults(name)  # also a dynamic @default, as Jupyter gets it
    if isinstance(value, (set, frozenset)):  # sorted: a set's order changes from run to run
        return "{" + ", ".join(repr(v) for v in sorted(value)) + "}" if value else "set()"
    return repr(value)


def traits_table(configurables: Iterable[Any]) -> list[str]:
    """The configurable traits each object's class itself defines: ``c.Class.name``, type,
    default (an unconfigured object's), help."""
    rows = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    for configurable in configurables:
        cls = type(configurable)
        traits = cls.class_own_traits(config=True)
        for name in sorted(traits):
            trait = traits[name]
            rows.append(f"| `c.{cls.__name__}.{name}` | {type(trait).__name__} | "
                        f"`{cell(_default_text(configurable, name))}` | "
                        f"{cell(trait.help) or '—'} |")
    return rows
