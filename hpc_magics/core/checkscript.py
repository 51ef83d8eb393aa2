"""Check a job script's ``#SBATCH`` block the way sbatch reads it, against a profile: a
verdict per line and every problem at once. Modelled options are checked against the
profile's limits (``validation``); other sbatch options pass through; an unknown option is a
warning (a site plugin may add it) unless sbatch would refuse it: an ambiguous abbreviation
or a misspelling (``--ntaks-per-node``, ``--mem-4G``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from . import validation
from .directives import (
    DIRECTIVE,
    NONE,
    OPTIONS,
    PLUGIN_OPTIONS,
    VALUE_CHECKS,
    Option,
    ambiguous,
    filename_notes,
    lookup,
    read_options,
)
from .errors import InvalidRequest
from .flags import FLAG_FIELDS
from .profiles import ClusterProfile
from .resources import ResourceRequest, updated
from .validation import ERROR, WARNING, Problem

OK, PASSED, IGNORED, COMMENT = "ok", "passed", "ignored", "comment"
_LOOKALIKE = re.compile(r"^\s*#+\s*SBATCH\b|^\s*#sbatch\b", re.IGNORECASE)


@dataclass(frozen=True)
class LineVerdict:
    number: int
    text: str
    verdict: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScriptReport:
    profile: str
    source: tuple[str, ...]  # the script's lines
    marks: Mapping[int, str]  # line → COMMENT, IGNORED or PASSED, whatever is said of it
    notes: Mapping[int, tuple[str, ...]]  # line → what is said of it, in order
    findings: tuple[Problem, ...]
    request: ResourceRequest  # its ``extra``: the options passed to sbatch as written
    option_lines: tuple[tuple[str, int], ...] = ()  # option → its last line

    @property
    def lines(self) -> tuple[LineVerdict, ...]:
        """A verdict for each directive line and each line something is said of."""
        out = []
        for number, line in enumerate(self.source, start=1):
            said = self.notes.get(number, ())
            if not (DIRECTIVE.match(line) or number in self.marks or said):
                continue
            verdict = self.marks.get(number, OK)
            if verdict in (OK, PASSED):  # the worst said of it, if anything is
                verdict = next((worst for worst in (ERROR, WARNING)
                                if any(n.startswith(worst) for n in said)), verdict)
            out.append(LineVerdict(number, line.strip(), verdict, said))
        return tuple(out)

    @property
    def errors(self) -> list[Problem]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors


def check_script(script: str, profile: ClusterProfile, whole_file: bool = False
                 ) -> ScriptReport:
    """Read ``script`` as sbatch does and check it against ``profile``. ``whole_file``: a
    file given to sbatch, which refuses one that does not start with ``#!``."""
    verdicts: dict[int, str] = {}
    notes: dict[int, list[str]] = {}
    findings: list[Problem] = []
    options: list[Option] = []
    lines = script.splitlines()
    in_header = True

    def note(number: int | None, severity: str, option: str, message: str) -> None:
        findings.append(Problem(severity, option, message, number, "syntax"))
        if number is not None:
            notes.setdefault(number, []).append(f"{severity}: {message}")

    if whole_file and not script.startswith("#!"):
        # an empty file has no line 1 to say it of: said of the whole file
        note(1 if lines else None, ERROR, "", "sbatch refuses a script whose first line is "
             f"not an interpreter line{'' if lines else ' (the file is empty)'}: "
             "add #!/bin/bash as line 1")

    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        match = DIRECTIVE.match(line)
        if match is None:
            if _LOOKALIKE.match(line) and in_header:
                verdicts[number] = COMMENT
                notes[number] = ["sbatch ignores this line: only '#SBATCH' at the start counts"]
            elif stripped and not stripped.startswith("#"):
                in_header = False
            continue
        if not in_header:
            verdicts[number] = IGNORED
            note(number, WARNING, "", "after the first command: sbatch ignores this line; "
                 "move it above the first command")
            continue
        try:
            options += read_options(match.group(2), number, profile.site_options)
        except InvalidRequest as error:
            note(number, ERROR, getattr(error, "option", ""), f"#SBATCH line {number}: {error}")

    has_array = any(o.name == "array" for o in options)
    last_line: dict[str, int] = {}
    values: dict[str, str] = {}
    extra: dict[str, str] = {}
    for option in options:
        number, name, value = option.line, option.name, option.value
        last_line[name] = number
        if not option.known:
            similar, typo = ambiguous(name), _typo(name, value)
            if similar:
                note(number, ERROR, name, f"--{name} is ambiguous to sbatch (--"
                     + ", --".join(similar) + "): write the option in full")
            elif typo:
                note(number, ERROR, typo[0], f"--{name} is not an sbatch option: {typo[1]}")
            elif name in PLUGIN_OPTIONS:
                note(number, WARNING, name, f"--{name} comes from the {PLUGIN_OPTIONS[name]} "
                     f"plugin, not sbatch itself: it works where the site installed "
                     f"{PLUGIN_OPTIONS[name]}")
            else:
                note(number, WARNING, name, f"--{name} is not an sbatch option (unless a site "
                     "plugin adds it): sbatch refuses unknown options; check the spelling")
            continue
        spec = lookup(name)
        if (value is not None and validation.PLACEHOLDER.fullmatch(value)
                and name not in _FREE_TEXT):
            note(number, ERROR, name, f"--{name} {value!r} is a placeholder: fill in your own")
            continue
        try:
            if spec and spec.kind in VALUE_CHECKS and value is not None:
                VALUE_CHECKS[spec.kind](value)
            if option.modelled and value is not None:
                field_name = FLAG_FIELDS[name]
                first = value.split("-")[0] if name == "nodes" else value
                values[field_name] = first
                updated(ResourceRequest(), {field_name: first})  # the modelled parse
        except InvalidRequest as error:
            note(number, ERROR, name, f"--{name}: {error}")
            values.pop(FLAG_FIELDS.get(name, ""), None)
            continue
        if spec and spec.kind == "filename" and value:
            for text in filename_notes(value, has_array):
                note(number, WARNING, name, f"--{name} {text}")
        if not option.modelled and name != "job-name":
            extra[name] = value or ""
            verdicts.setdefault(number, PASSED)

    request = updated(ResourceRequest(profile=profile.name, backend="slurm",
                                      extra=tuple(extra.items())), values)
    report = ScriptReport(profile.name, tuple(lines), verdicts,
                          {number: tuple(said) for number, said in notes.items()},
                          tuple(findings), request, tuple(last_line.items()))
    return with_findings(report, validation.check(request, profile))


def with_findings(report: ScriptReport, more: list[Problem] | tuple[Problem, ...]
                  ) -> ScriptReport:
    """``report`` with more findings (the profile's limits, live checks), each on the line
    of its option as the script spelled it."""
    lines = dict(report.option_lines)
    placed = [replace(f, field=(named := _option_for(f.field, lines)),
                      line=f.line or lines.get(named)) for f in more]
    notes = dict(report.notes)
    for finding in placed:
        if finding.line:
            notes[finding.line] = (*notes.get(finding.line, ()),
                                   f"{finding.severity}: {finding.message}")
    return replace(report, notes=notes, findings=tuple(sorted(
        (*report.findings, *placed), key=lambda f: (f.severity != ERROR, f.line or 0))))


# Options whose text never stops a job (the account has its own placeholder rule).
_FREE_TEXT = frozenset({"account", "mail-user", "job-name", "comment"})


def _typo(spelling: str, value: str | None) -> tuple[str, str] | None:
    """An option sbatch does not know (nor as an abbreviation) that is a known one misspelt
    (``--ntaks-per-node``) or glued to its value with a dash (``--mem-4G``): (the option
    meant, the fix). sbatch refuses it, unless a well-known plugin adds that very name
    (``--container-writable``, pyxis)."""
    if spelling in PLUGIN_OPTIONS:
        return None
    for option in OPTIONS:
        rest = spelling[len(option.name) + 1:]
        if option.value != NONE and spelling.startswith(option.name + "-") and rest:
            return option.name, f"write --{option.name}={rest}"
    close = difflib.get_close_matches(spelling, [o.name for o in OPTIONS], n=1, cutoff=0.85)
    if close:
        shown = f"--{close[0]}={value}" if value else f"--{close[0]}"
        return close[0], f"did you mean {shown}?"
    return None


def _option_for(field_name: str, last_line: dict[str, int]) -> str:
    """The option a validation problem is about, as the script spelled the request."""
    spellings = ("gpus-per-node", "gres", "gpus") if field_name == "gpus-per-node" else ()
    return next((name for name in spellings if name in last_line), field_name)


def render(report: ScriptReport, name: str = "script") -> str:
    """The report as text: a verdict per line, then every problem and the summary."""
    width = len(str(max((v.number for v in report.lines), default=1)))
    text = [f"{name} (profile {report.profile})"]
    for verdict in report.lines:
        text.append(f"  {str(verdict.number).rjust(width)}  {verdict.verdict:<8} {verdict.text}")
        text += [f"  {' ' * width}           {n}" for n in verdict.notes]
    if report.request.extra:
        text.append("passed to sbatch as written (not checked against the profile): "
                    + ", ".join(f"--{k}" for k, _ in report.request.extra))
    shown = {verdict.number for verdict in report.lines}  # every finding counted is printed
    text += [str(f) for f in report.findings if f.line not in shown]
    errors = len(report.errors)
    warnings = sum(f.severity == WARNING for f in report.findings)
    text.append(f"{'FAIL' if errors else 'OK'}: {errors} error(s), {warnings} warning(s)")
    return "\n".join(text)


def syntax_problems(cell: str, profile: ClusterProfile) -> list[Problem]:
    """What sbatch itself would say about a cell's #SBATCH lines (misspelt options, malformed
    values, lines it ignores), for ``%%sbatch``; the limits are checked on the merged request."""
    if "sbatch" not in cell.lower():  # no directive, nor one misspelt: nothing to say
        return []
    report = check_script(cell, profile)
    return [replace(f, field=f.field or "sbatch", line=None,
                    message=f.message if f.message.startswith("#SBATCH line") or not f.line
                    else f"#SBATCH line {f.line}: {f.message}")
            for f in report.findings if f.rule == "syntax"]
