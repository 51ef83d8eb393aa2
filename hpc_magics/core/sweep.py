"""Sweeps, pure: parameter grids, array ranges, splits, the tasks' bookkeeping.

``--sweep lr=1e-3,1e-4 --sweep batch=32,64`` is the product of the values; ``--sweep-from
NAME`` takes a list of dicts or a dict of equally long lists. The points become one Slurm
job array, split only when longer than the cluster's ``MaxArraySize``.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequest
from .resources import _unquote, positive_int

# Slurm's default when ``scontrol show config`` cannot be read.
DEFAULT_MAX_ARRAY_SIZE = 1001

Point = dict[str, Any]


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _values(text: str) -> list[Any]:
    """``1e-3,1e-4`` → [0.001, 0.0001]; ``adam,sgd`` → ['adam', 'sgd']; ``'a,b',(1,2)``
    keeps the commas Python would; one list ``[1,2,3]`` spells the values too."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" \
            and text[0] not in text[1:-1]:
        text = text[1:-1]  # IPython keeps the quotes around a magic's argument
    listed = _literal(f"[{text}]")
    if isinstance(listed, list):
        if len(listed) == 1 and isinstance(listed[0], list) and text.startswith("["):
            return list(listed[0])
        return listed
    parts = [part.strip() for part in _top_level_split(text)]
    if "" in parts:
        raise ValueError("an empty value")
    return [_literal(part) for part in parts]


def _top_level_split(text: str) -> list[str]:
    """Split on commas outside quotes and brackets."""
    parts, current, depth, quote = [], "", 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    return [*parts, current]


def _check_name(name: str, origin: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise InvalidRequest(f"{origin}: {name!r} is not a Python variable name: use a name "
                             "such as lr or batch_size")


def parse_sweep(spec: str) -> tuple[str, list[Any]]:
    """One ``--sweep NAME=V1,V2`` → (name, values)."""
    spec = _unquote(spec)  # IPython keeps the quotes of --sweep 'lr=1,2'
    name, equals, text = spec.partition("=")
    name = name.strip()
    if not equals:
        raise InvalidRequest(f"--sweep {spec!r} has no '=': write --sweep {name or 'lr'}="
                             "VALUE1,VALUE2")
    _check_name(name, f"--sweep {spec!r}")
    try:
        values = _values(text) if text.strip() else []
    except ValueError:
        raise InvalidRequest(f"--sweep {spec!r} has an empty value between commas: write "
                             f"--sweep {name}=VALUE1,VALUE2") from None
    if not values:
        raise InvalidRequest(f"--sweep {spec!r} has no values: write --sweep {name}=VALUE1,"
                             "VALUE2")
    return name, values


def points_from(name: str, value: Any) -> list[Point]:
    """``--sweep-from NAME``: a list of dicts, a dict of equally long lists, or a DataFrame."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, Mapping):  # a pandas DataFrame
        value = to_dict("records")
    if isinstance(value, Mapping):
        columns = {str(k): list(v) if isinstance(v, Iterable) and not isinstance(v, (str, bytes))
                   else None for k, v in value.items()}
        bad = [k for k, v in columns.items() if v is None]
        if bad:
            raise InvalidRequest(f"--sweep-from {name}: its {bad[0]!r} is not a list: use a "
                                 "dict of equally long lists, or a list of dicts")
        lengths = {len(v or ()) for v in columns.values()}
        if len(lengths) > 1:
            raise InvalidRequest(f"--sweep-from {name}: its lists have different lengths "
                                 f"({', '.join(map(str, sorted(lengths)))}): make them equal")
        keys = list(columns)
        points = [dict(zip(keys, row, strict=True))
                  for row in zip(*(columns[k] or () for k in keys), strict=True)]
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        if not all(isinstance(item, Mapping) for item in value):
            raise InvalidRequest(f"--sweep-from {name}: every item must be a dict of "
                                 "parameters ({'lr': 0.1, ...}), or give a dict of lists")
        points = [{str(k): v for k, v in item.items()} for item in value]
    else:
        raise InvalidRequest(f"--sweep-from {name} is a {type(value).__name__}: use a list of "
                             "dicts, or a dict of lists")
    for point in points:
        for key in point:
            _check_name(key, f"--sweep-from {name}")
    if not points:
        raise InvalidRequest(f"--sweep-from {name} is empty: it needs at least one point")
    return points


def sweep_points(specs: Sequence[str], base: Sequence[Point] | None = None) -> list[Point]:
    """The product of ``--sweep`` values (with the ``--sweep-from`` points, when given)."""
    axes = [parse_sweep(spec) for spec in specs]
    names = [name for name, _ in axes]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise InvalidRequest(f"--sweep {duplicate} is given twice: list all its values once "
                             f"(--sweep {duplicate}=V1,V2,V3)")
    grid = [dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(values for _, values in axes))]
    if base is None:
        return grid
    clash = next((n for n in names if any(n in point for point in base)), None)
    if clash:
        raise InvalidRequest(f"--sweep {clash} is also a key of --sweep-from: give it once")
    return [{**point, **extra} for point in base for extra in grid]


# ------------------------------------------------------------------ arrays
@dataclass(frozen=True)
class ArrayPart:
    """One Slurm job array of a sweep: the sweep's points ``indices``, in task order."""

    indices: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.indices)


def split(indices: Sequence[int], max_array_size: int) -> list[ArrayPart]:
    """Arrays of at most ``max_array_size`` tasks (Slurm's task ids run 0..MaxArraySize-1)."""
    size = max(1, max_array_size)
    return [ArrayPart(tuple(indices[start:start + size]))
            for start in range(0, len(indices), size)]


def array_range(count: int, parallelism: int | None = None) -> str:
    """sbatch's ``--array`` value for ``count`` tasks: ``0-K`` or ``0-K%N``."""
    text = "0" if count == 1 else f"0-{count - 1}"
    return f"{text}%{parallelism}" if parallelism else text


def check_parallelism(value: Any) -> int | None:
    return None if value is None else positive_int("array-parallelism", value,
                                                   " (tasks running at once)")


# ------------------------------------------------------------------ site limits
def config_value(config_text: str, key: str) -> str | None:
    """One ``Key = value`` of ``scontrol show config``."""
    match = re.search(rf"^\s*{re.escape(key)}\s*=\s*(.*?)\s*$", config_text, re.MULTILINE)
    return match.group(1) if match else None


def max_array_size(config_text: str) -> int:
    """``MaxArraySize`` from ``scontrol show config`` (Slurm's default when absent)."""
    value = config_value(config_text, "MaxArraySize") or ""
    return int(value) if value.isdigit() else DEFAULT_MAX_ARRAY_SIZE


def limits_enforced(config_text: str) -> bool:
    """Does the controller enforce association/QOS limits (``AccountingStorageEnforce``)?"""
    value = (config_value(config_text, "AccountingStorageEnforce") or "").lower()
    return any(word in value for word in ("limits", "safe", "qos"))


def max_submit_jobs(association_text: str, qos_text: str,
                    account: str | None = None) -> tuple[int, str] | None:
    """The smallest jobs-per-user limit and where it comes from, or ``None``, from
    ``sacctmgr -n -P show assoc ... format=Account,MaxSubmit,QOS`` (the rows of ``account``
    when it is listed) and ``sacctmgr -n -P show qos format=Name,MaxSubmitPU``."""
    rows = [line.strip().split("|") for line in association_text.splitlines() if line.strip()]
    rows = [row + [""] * (3 - len(row)) for row in rows]
    if account and any(row[0] == account for row in rows):
        rows = [row for row in rows if row[0] == account]
    limits: list[tuple[int, str]] = []
    qos_names: set[str] = set()
    for row_account, max_submit, qos in rows:
        if max_submit.strip().isdigit():
            limits.append((int(max_submit),
                           f"MaxSubmitJobs of your association with account {row_account}"))
        qos_names.update(q.strip() for q in qos.split(",") if q.strip())
    for line in qos_text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0] in qos_names and parts[1].strip().isdigit():
            limits.append((int(parts[1]), f"MaxSubmitJobsPerUser of QOS {parts[0]}"))
    return min(limits) if limits else None


def check_submit_limit(tasks: int, queued: int, limit: tuple[int, str] | None) -> None:
    """Refuse, in one line, a sweep the site's jobs-per-user limit would refuse."""
    if limit is None or queued + tasks <= limit[0]:
        return
    allowed, where = limit
    raise InvalidRequest(
        f"the sweep has {tasks} tasks and you have {queued} jobs queued, over the site's limit "
        f"of {allowed} jobs per user ({where}); --array-parallelism does not change that "
        f"(every task counts): sweep fewer points (split the values over several cells run "
        f"one after the other) or ask your site for a higher limit")


# ------------------------------------------------------------------ task bookkeeping
def compress(indices: Sequence[int]) -> list[list[int]]:
    """[0, 1, 2, 7] → [[0, 3], [7, 8]]: half-open runs, so meta.json stays small."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and runs[-1][1] == index:
            runs[-1][1] = index + 1
        else:
            runs.append([index, index + 1])
    return runs


def expand(runs: Iterable[Sequence[int]]) -> list[int]:
    return [index for start, stop in runs for index in range(start, stop)]


def task_job_ids(arrays: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """Sweep point → the Slurm id of its latest attempt (``123_4``), from meta's arrays."""
    latest: dict[int, str] = {}
    for array in sorted(arrays, key=lambda a: int(a.get("attempt", 0))):
        for position, index in enumerate(expand(array.get("indices", ()))):
            latest[index] = f"{array['job_id']}_{position}"
    return latest


def superseded_arrays(arrays: Iterable[Mapping[str, Any]]) -> set[str]:
    """Arrays some of whose tasks were retried later: they cannot all end well, so a job
    ``-d afterok:SWEEP`` waits for them with afterany (and afterok for the retries)."""
    latest = task_job_ids(arrays)
    return {str(a["job_id"]) for a in arrays
            if any(not latest[i].startswith(f"{a['job_id']}_")
                   for i in expand(a.get("indices", ())))}
