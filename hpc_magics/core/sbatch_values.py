"""What sbatch accepts as the value of each kind of option (``sbatch_options.OPTIONS[].kind``),
as small checks that raise ``InvalidRequest`` naming the value and the fix."""

from __future__ import annotations

import re
from collections.abc import Callable

from .errors import InvalidRequest
from .resources import GpuRequest
from .units import parse_memory, parse_time


def _count(text: str, least: int = 1) -> None:
    if not re.fullmatch(r"\d+", text) or int(text) < least:
        raise InvalidRequest(f"{text!r} must be a whole number of at least {least}")


def _nodes(text: str) -> None:
    if not re.fullmatch(r"[1-9]\d*(-\d+)?|\d+(,\d+)+", text):
        raise InvalidRequest(f"{text!r} must be a node count (2) or a range (1-4)")


def _gres(text: str) -> None:
    for item in text.split(","):
        if item.startswith("gpu"):
            GpuRequest.parse(item, flag="--gres")
        elif not re.fullmatch(r"[\w.-]+(:[\w.-]+)*", item):
            raise InvalidRequest(f"{item!r} is not NAME[:TYPE][:COUNT]")


_ARRAY_ITEM = r"\d+(-\d+(:\d+)?)?"


def _array(text: str) -> None:
    if not re.fullmatch(rf"{_ARRAY_ITEM}(,{_ARRAY_ITEM})*(%\d+)?", text):
        raise InvalidRequest(f"{text!r} is not an index list like 0-15, 1,3,5, 1-9:2 or 1-100%10")


_DEPENDENCY_ITEM = (r"singleton|(after|afterany|afterok|afternotok|aftercorr|afterburstbuffer)"
                    r"(:\d+(_\d+)?(\+\d+)?)+")


def _dependency(text: str) -> None:
    if "$" in text:
        raise InvalidRequest(f"{text!r}: sbatch does not expand variables in #SBATCH lines; "
                             "pass the dependency on the command line: sbatch -d afterok:ID")
    if not re.fullmatch(rf"({_DEPENDENCY_ITEM})([,?]({_DEPENDENCY_ITEM}))*", text):
        raise InvalidRequest(f"{text!r} is not like afterok:123[:456], afterany:123 or singleton")


_MAIL_TYPES = {"NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND",
               "STAGE_OUT", "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50",
               "ARRAY_TASKS"}


def _mail_type(text: str) -> None:
    wrong = [t for t in text.upper().split(",") if t not in _MAIL_TYPES]
    if wrong:
        raise InvalidRequest(f"{', '.join(wrong)} is not a mail type: use "
                             "BEGIN, END, FAIL, ALL or NONE (comma separated)")


def _open_mode(text: str) -> None:
    if text[:1].lower() not in {"a", "t"}:
        raise InvalidRequest(f"{text!r}: use append or truncate")


VALUE_CHECKS: dict[str, Callable[[str], object]] = {
    "time": parse_time, "memory": parse_memory, "count": _count,
    "count0": lambda text: _count(text, 0), "nodes": _nodes,
    "gpus": lambda text: GpuRequest.parse(text, flag="--gpus"), "gres": _gres,
    "array": _array, "dependency": _dependency, "mail-type": _mail_type,
    "open-mode": _open_mode,
}
_FILENAME_PATTERN = re.compile(r"%(\d*)([%AaJjNnstuxb])?")


def filename_notes(text: str, has_array: bool) -> list[str]:
    notes = []
    letters = {m.group(2) for m in _FILENAME_PATTERN.finditer(text)}
    if None in letters:
        notes.append(f"{text!r} has a % that is not a file name pattern (%j job id, %A array "
                     "job id, %a array index, %x job name, %u user, %N node, %%)")
    if letters & {"a", "A"} and not has_array:
        notes.append(f"{text!r} uses %a/%A but the job is not an array (--array)")
    if "$" in text:
        notes.append(f"{text!r}: sbatch does not expand variables in #SBATCH lines; the file "
                     "name keeps the '$' literally")
    return notes
