"""Read ``#SBATCH`` lines the way sbatch does (getopt_long over sbatch's own option table,
``sbatch_options``): several options a line, ``--flag=value`` and ``--flag value``, short
options, abbreviations, quotes, inline comments; the last of duplicates wins; ``##SBATCH``
and ``# SBATCH`` are ignored, as by sbatch. The one reader, for a cell's directives, the
checker and the precedence of the user's ``SBATCH_*`` defaults.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass

from .errors import InvalidRequest
from .flags import FLAG_FIELDS
from .sbatch_options import BY_SHORT, NONE, REQUIRED, SbatchOption, lookup

_DIRECTIVE = re.compile(r"^#SBATCH\s+(.*)$")


@dataclass(frozen=True)
class Option:
    line: int
    name: str  # sbatch's long spelling ("time"), or what was written if sbatch lacks it
    value: str | None
    known: bool
    modelled: bool
    spelling: str = ""  # as written, without dashes ("t", "time", "ti")


class OptionError(InvalidRequest):
    """A line's error that belongs to one option."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def read_options(text: str, number: int = 0, site_options: Collection[str] = ()
                 ) -> list[Option]:
    """The options on one #SBATCH line (``text``: after ``#SBATCH``), as sbatch's
    getopt_long reads them; ``site_options``: long options a site's plugin adds."""
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError as error:
        raise InvalidRequest(f"{error}: check the quotes") from None
    found: list[Option] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.startswith(("\u2013", "\u2014")):  # en and em dash pasted from documents
            raise InvalidRequest(f"{token!r} starts with a dash that is not '-': type '--' "
                                 "(two hyphens)")
        option: SbatchOption | None
        value: str | None
        if token.startswith("--"):
            spelling, has_value, value = token[2:].partition("=")
            option = lookup(spelling)
            if option is None:
                if not has_value and index < len(tokens) and not tokens[index].startswith("-"):
                    value, index = tokens[index], index + 1
                found.append(Option(number, spelling, value if has_value or value else None,
                                    known=spelling in site_options, modelled=False,
                                    spelling=spelling))
                continue
            if option.value == NONE and has_value:
                raise InvalidRequest(f"--{option.name} takes no value (given {value!r})")
            value = value if has_value else None
            named, example = f"--{option.name}", f"--{option.name}=VALUE"
        elif token.startswith("-") and len(token) >= 2:
            spelling, option = token[1], BY_SHORT.get(token[1])
            if option is None:
                raise InvalidRequest(f"-{token[1]} is not an sbatch option")
            value = token[2:] or None
            named, example = f"-{option.short} (--{option.name})", f"-{option.short} VALUE"
        else:
            after = found[-1] if found and found[-1].line == number else None
            if after is not None:  # "--time=2 hours": the value's second word, unquoted
                raise OptionError(after.name, f"{token!r} is not an option: a value with a "
                                  f"space needs quotes (--{after.name}=\"{after.value} {token}\")")
            raise InvalidRequest(f"{token!r} is not an option: options start with '-' or '--'")
        if option.value == REQUIRED and value is None:
            if index >= len(tokens):
                raise InvalidRequest(f"{named} needs a value: give one (#SBATCH {example}) or "
                                     "remove it")
            value, index = tokens[index], index + 1
        found.append(Option(number, option.name, value, known=True,
                            modelled=option.name in FLAG_FIELDS, spelling=spelling))
    return found


@dataclass(frozen=True)
class Directives:
    values: dict[str, str]  # field name → raw text
    extra: tuple[tuple[str, str], ...]  # flags hpc_magics passes through untouched
    job_name: str | None
    body: str  # the cell without its directive lines


def parse(cell: str) -> Directives:
    """Take the leading ``#SBATCH`` lines (after blank lines and comments) off a cell."""
    values: dict[str, str] = {}
    extra: dict[str, str] = {}
    job_name: str | None = None
    lines = cell.splitlines()
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        match = _DIRECTIVE.match(stripped)
        if stripped and not stripped.startswith("#"):
            break
        try:
            options = read_options(match.group(1), index + 1) if match else []
        except InvalidRequest as error:
            raise InvalidRequest(f"#SBATCH line {index + 1}: {error}") from None
        for option in options:
            if option.name == "job-name":
                job_name = option.value or ""
            elif option.modelled:
                values[FLAG_FIELDS[option.name]] = option.value or ""
            else:
                extra[option.spelling] = option.value or ""
        index += 1
    return Directives(values, tuple(extra.items()), job_name, "\n".join(lines[index:]))
