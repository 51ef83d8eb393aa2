"""Read ``#SBATCH`` lines the way sbatch does: getopt_long over sbatch's own option table
(Slurm 24.05), so short options, abbreviations, quotes and comments read as in sbatch; the
last of duplicates wins; ``##SBATCH`` is ignored. The one reader, for a cell, the checker
(which tells a typo from an option it merely passes on) and the user's ``SBATCH_*``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass

from .errors import InvalidRequest
from .flags import FLAG_FIELDS
from .resources import GpuRequest, check_gres
from .units import parse_memory, parse_time

REQUIRED, OPTIONAL, NONE = "required", "optional", "none"


@dataclass(frozen=True)
class SbatchOption:
    name: str
    short: str | None = None
    value: str = REQUIRED  # REQUIRED, OPTIONAL (only as --opt=value) or NONE
    kind: str = "text"  # how the value is checked: VALUE_CHECKS below


_o = SbatchOption
OPTIONS: tuple[SbatchOption, ...] = (
    _o("account", "A"), _o("acctg-freq"), _o("array", "a", kind="array"), _o("batch"),
    _o("bb"), _o("bbf"), _o("begin", "b"), _o("chdir", "D"), _o("cluster-constraint"),
    _o("clusters", "M"), _o("comment"), _o("constraint", "C"), _o("container"),
    _o("container-id"), _o("contiguous", value=NONE), _o("core-spec", "S", kind="count0"),
    _o("cores-per-socket", kind="count"), _o("cpu-freq"), _o("cpus-per-gpu", kind="count"),
    _o("cpus-per-task", "c", kind="count"), _o("deadline"), _o("delay-boot"),
    _o("dependency", "d", kind="dependency"), _o("distribution", "m"),
    _o("error", "e", kind="filename"), _o("exclude", "x"), _o("exclusive", value=OPTIONAL),
    _o("export"), _o("export-file"), _o("extra"), _o("extra-node-info", "B"),
    _o("get-user-env", value=OPTIONAL), _o("gid"), _o("gpu-bind"), _o("gpu-freq"),
    _o("gpus", "G", kind="gpus"), _o("gpus-per-node", kind="gpus"),
    _o("gpus-per-socket", kind="gpus"), _o("gpus-per-task", kind="gpus"),
    _o("gres", kind="gres"), _o("gres-flags"), _o("help", "h", value=NONE), _o("hint"),
    _o("hold", "H", value=NONE), _o("ignore-pbs", value=NONE), _o("input", "i"),
    _o("job-name", "J"), _o("kill-on-invalid-dep"), _o("licenses", "L"),
    _o("mail-type", kind="mail-type"), _o("mail-user"), _o("mcs-label"),
    _o("mem", kind="memory"), _o("mem-bind"), _o("mem-per-cpu", kind="memory"),
    _o("mem-per-gpu", kind="memory"), _o("mincpus", kind="count"), _o("network"),
    _o("nice", value=OPTIONAL), _o("no-kill", "k", value=OPTIONAL),
    _o("no-requeue", value=NONE), _o("nodefile", "F"), _o("nodelist", "w"),
    _o("nodes", "N", kind="nodes"), _o("ntasks", "n", kind="count"),
    _o("ntasks-per-core", kind="count"), _o("ntasks-per-gpu", kind="count"),
    _o("ntasks-per-node", kind="count"), _o("ntasks-per-socket", kind="count"),
    _o("open-mode", kind="open-mode"), _o("output", "o", kind="filename"),
    _o("overcommit", "O", value=NONE), _o("oversubscribe", "s", value=NONE),
    _o("parsable", value=NONE), _o("partition", "p"), _o("power"), _o("prefer"),
    _o("priority"), _o("profile"), _o("propagate", value=OPTIONAL), _o("qos", "q"),
    _o("quiet", "Q", value=NONE), _o("reboot", value=NONE), _o("requeue", value=NONE),
    _o("reservation"), _o("resv-ports", value=OPTIONAL), _o("segment"), _o("signal"),
    _o("sockets-per-node", kind="count"), _o("spread-job", value=NONE), _o("switches"),
    _o("test-only", value=NONE), _o("thread-spec", kind="count"),
    _o("threads-per-core", kind="count"), _o("time", "t", kind="time"),
    _o("time-min", kind="time"), _o("tmp", kind="memory"), _o("tres-bind"),
    _o("tres-per-task"), _o("uid"), _o("usage", "u", value=NONE),
    _o("use-min-nodes", value=NONE), _o("verbose", "v", value=NONE),
    _o("version", "V", value=NONE), _o("wait", "W", value=NONE), _o("wait-all-nodes"),
    _o("wckey"), _o("wrap"),
)

BY_NAME: dict[str, SbatchOption] = {option.name: option for option in OPTIONS}
BY_SHORT: dict[str, SbatchOption] = {o.short: o for o in OPTIONS if o.short}

# Spellings sbatch still takes for an option that has another name now.
ALIASES: dict[str, str] = {"tasks-per-node": "ntasks-per-node", "share": "oversubscribe",
                           "workdir": "chdir"}

# Options the pyxis container plugin adds to sbatch and srun where a site installs it (CSCS
# Alps, many GPU clusters; NVIDIA/pyxis wiki, Usage): not --container with a glued value.
PLUGIN_OPTIONS: dict[str, str] = {name: "pyxis" for name in (
    "container-image", "container-mounts", "container-workdir", "container-name",
    "container-save", "container-mount-home", "no-container-mount-home",
    "container-remap-root", "no-container-remap-root", "container-entrypoint",
    "no-container-entrypoint", "container-entrypoint-log", "container-writable",
    "container-readonly", "container-env")}


def lookup(spelling: str) -> SbatchOption | None:
    """The option a long spelling means: exact, an alias, or (as getopt_long does) the one
    option it is an unambiguous beginning of."""
    matches = [o for o in OPTIONS if o.name.startswith(spelling)]
    return BY_NAME.get(ALIASES.get(spelling, spelling)) or (
        matches[0] if len(matches) == 1 else None)


def ambiguous(spelling: str) -> list[str]:
    """The options a long spelling could be the beginning of, when it is more than one."""
    matches = [o.name for o in OPTIONS if o.name.startswith(spelling)]
    return matches if len(matches) > 1 and spelling not in BY_NAME else []


# ------------------------------------------------------ what each kind of value must be
def _count(text: str, least: int = 1) -> None:
    if not re.fullmatch(r"\d+", text) or int(text) < least:
        raise InvalidRequest(f"{text!r} must be a whole number of at least {least}")


def _nodes(text: str) -> None:
    if not re.fullmatch(r"[1-9]\d*(-\d+)?|\d+(,\d+)+", text):
        raise InvalidRequest(f"{text!r} must be a node count (2) or a range (1-4)")


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
    "gpus": lambda text: GpuRequest.parse(text, flag="--gpus"), "gres": check_gres,
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


# ------------------------------------------------------ reading #SBATCH lines
# A directive line, as sbatch knows one: "#SBATCH" first (after blanks), then its options
DIRECTIVE = re.compile(r"^\s*#SBATCH(\s|$)(.*)$")


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
    options: tuple[Option, ...] = ()  # every option read, in order


def parse(cell: str) -> Directives:
    """Take the leading ``#SBATCH`` lines (after blank lines and comments) off a cell."""
    values: dict[str, str] = {}
    extra: dict[str, str] = {}
    job_name: str | None = None
    found: list[Option] = []
    lines = cell.splitlines()
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        match = DIRECTIVE.match(stripped)
        if stripped and not stripped.startswith("#"):
            break
        try:
            options = read_options(match.group(2), index + 1) if match else []
        except InvalidRequest as error:
            raise InvalidRequest(f"#SBATCH line {index + 1}: {error}") from None
        found += options
        for option in options:
            if option.name == "job-name":
                job_name = option.value or ""
            elif option.modelled:
                values[FLAG_FIELDS[option.name]] = option.value or ""
            else:
                extra[option.spelling] = option.value or ""
        index += 1
    return Directives(values, tuple(extra.items()), job_name, "\n".join(lines[index:]),
                      tuple(found))
