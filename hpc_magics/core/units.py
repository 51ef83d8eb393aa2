"""Time and memory units as Slurm spells them, plus the spellings people use.

Slurm's own time formats (sbatch(1)): ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M`` and
``D-H:M:S``; ``0``, ``infinite`` and ``unlimited`` mean no limit.  People also write
``90min``, ``2h``, ``1d12h``, ``30s``; those are accepted and rendered back in Slurm's form.
"""

from __future__ import annotations

import functools
import math
import re
import time

from .errors import InvalidRequest

UNLIMITED = -1  # seconds value meaning "no limit"

_HUMAN_UNITS = {unit: seconds for seconds, units in (
    (1, "s sec secs second seconds"), (60, "m min mins minute minutes"),
    (3600, "h hr hrs hour hours"), (86400, "d day days")) for unit in units.split()}
_HUMAN_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)")
_SLURM_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_time(text: str | int) -> int:
    """A time limit in seconds (``UNLIMITED`` for no limit): ``1-02:00:00``, ``90min``,
    ``30`` (minutes)."""
    if isinstance(text, int):
        return text * 60
    value = str(text).strip().strip("'\"")
    if value.lower() in {"infinite", "unlimited"}:
        return UNLIMITED
    match = _SLURM_TIME.match(value)
    if match:
        days, first, second, third = match.groups()
        # D-H[:M[:S]] and H:M:S count from hours; M:S and M from minutes
        clock = (first, second, third) if days or third else ("0", first, second)
        hours, minutes, seconds = (int(part or 0) for part in clock)
        total = ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds
        return UNLIMITED if total == 0 else total
    compact = value.replace(" ", "")
    parts = _HUMAN_PART.findall(compact)
    if (parts and "".join(f"{n}{u}" for n, u in parts) == compact
            and all(unit.lower() in _HUMAN_UNITS for _, unit in parts)):
        human = sum(float(number) * _HUMAN_UNITS[unit.lower()] for number, unit in parts)
        if human > 0:
            return round(human)
    raise InvalidRequest(f"time {value!r} is not understood: use minutes ('90'), 'HH:MM:SS', "
                         "'D-HH:MM:SS' or a duration like '2h' or '90min'")


def format_time(seconds: int) -> str:
    """Render seconds in Slurm's ``D-HH:MM:SS`` form (``HH:MM:SS`` under a day)."""
    if seconds == UNLIMITED:
        return "UNLIMITED"
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def format_duration(seconds: float) -> str:
    """Short human form, as in a status bar: ``3h12m``, ``45m``, ``2d4h``, ``40s``."""
    days, rest = divmod(max(0, int(seconds)), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m" if minutes else f"{secs}s"


def format_clock(epoch: float, now: float) -> str:
    """``14:32`` today, ``2026-11-23 14:32`` on another day (local time)."""
    moment, today = time.localtime(epoch), time.localtime(now)
    return time.strftime("%H:%M" if moment[:3] == today[:3] else "%Y-%m-%d %H:%M", moment)


_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?$", re.IGNORECASE)
_MEMORY_FACTOR_MB = {"K": 1 / 1024, "M": 1, "": 1, "G": 1024, "T": 1024 * 1024}


def parse_memory(text: str | int) -> int:
    """Megabytes, as sbatch reads ``--mem`` (no suffix: MB; ``0``: all of the node's)."""
    value = str(text).strip().strip("'\"")
    match = _MEMORY.match(value)
    if not match and _MEMORY.match(value[1:]) and value.startswith("-"):
        raise InvalidRequest(f"memory {value!r} must be positive, e.g. '4G' (0: all of "
                             "the node's)")
    if not match:
        raise InvalidRequest(f"memory {value!r} is not understood: use a number of megabytes "
                             "or a unit like '4G', '500M', '1T'")
    number, unit = match.groups()
    megabytes = float(number) * _MEMORY_FACTOR_MB[unit.upper()]
    return 0 if megabytes == 0 else max(1, math.ceil(megabytes))


def format_memory(megabytes: int) -> str:
    """Render megabytes the way sbatch accepts it, preferring whole gigabytes."""
    unit, size = next(((u, s) for u, s in (("T", 1024 * 1024), ("G", 1024))
                       if megabytes and megabytes % s == 0), ("M", 1))
    return f"{megabytes // size}{unit}"


def slurm_seconds(text: str) -> float | None:
    """Seconds of Slurm's printed durations (squeue, sacct, scontrol): ``[D-][HH:]MM:SS[.mmm]``
    or ``D-HH``; ``None`` for UNLIMITED, N/A, INVALID, Partition_Limit and other words."""
    value = text.strip()
    if not value[:1].isdigit():
        return None
    day_text, _, clock = value.partition("-") if "-" in value else ("0", "", value)
    try:
        days, parts = int(day_text), [float(p) for p in clock.split(":")] if clock else [0.0]
    except ValueError:
        return None
    if len(parts) > 3:
        return None
    if len(parts) == 1 and days:  # "D-HH"
        return days * 86400 + parts[0] * 3600
    return days * 86400 + functools.reduce(lambda total, part: total * 60 + part, parts)


_LEADING_DIGITS = re.compile(r"\s*(\d+)")


def slurm_int(text: str | None) -> int | None:
    """The whole number a Slurm field starts with (``4``, sinfo's ``64+``); ``None`` for
    an empty field, ``N/A`` or other words."""
    match = _LEADING_DIGITS.match(text or "")
    return int(match.group(1)) if match else None
