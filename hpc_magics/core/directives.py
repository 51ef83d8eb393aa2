"""Read ``#SBATCH`` lines the way sbatch does, so pasted job-script headers just work.

Takes several options on one line, ``--flag=value`` and ``--flag value``, short options,
quotes, inline comments, and duplicates (the last wins).  ``##SBATCH`` and ``# SBATCH``
are ignored, as sbatch ignores them.  An en dash in place of ``--`` is explained.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from .errors import InvalidRequest
from .flags import FLAG_FIELDS
from .sbatch_options import OPTIONS, REQUIRED

_DIRECTIVE = re.compile(r"^#SBATCH\s+(.*)$")
# sbatch's short options that take a value (``-b now+1hour``), as its own table says
SHORT_WITH_VALUE = frozenset(o.short for o in OPTIONS if o.short and o.value == REQUIRED)


@dataclass(frozen=True)
class Directives:
    values: dict[str, str]  # field name → raw text
    extra: tuple[tuple[str, str], ...]  # flags hpc_magics passes through untouched
    job_name: str | None
    body: str  # the cell without its directive lines


def _split(line: str, lineno: int) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError as error:
        raise InvalidRequest(f"#SBATCH line {lineno}: {error}: check the quotes") from None


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
        if not stripped or (stripped.startswith("#") and not match):
            index += 1
            continue
        if not match:
            break
        tokens = _split(match.group(1), index + 1)
        position = 0
        while position < len(tokens):
            token = tokens[position]
            if token.startswith(("\u2013", "\u2014")):  # en and em dash pasted from documents
                raise InvalidRequest(f"#SBATCH line {index + 1}: {token!r} starts with a dash "
                                     "that is not '-': type '--' (two hyphens)")
            if token.startswith("--"):
                flag, has_value, value = token[2:].partition("=")
                takes_next = position + 1 < len(tokens) and not tokens[position + 1].startswith("-")
                if not has_value and (flag in FLAG_FIELDS or flag == "job-name" or takes_next):
                    position += 1
                    value = tokens[position] if position < len(tokens) else ""
            elif token.startswith("-") and len(token) >= 2:
                flag, value = token[1], token[2:]
                if not value and flag in SHORT_WITH_VALUE:
                    position += 1
                    value = tokens[position] if position < len(tokens) else ""
            else:
                raise InvalidRequest(f"#SBATCH line {index + 1}: {token!r} is not an option: "
                                     "options start with '-' or '--'")
            position += 1
            if flag in {"job-name", "J"}:
                job_name = value
            elif flag in FLAG_FIELDS:
                values[FLAG_FIELDS[flag]] = value
            else:
                extra[flag] = value
        index += 1
    return Directives(values, tuple(extra.items()), job_name, "\n".join(lines[index:]))
