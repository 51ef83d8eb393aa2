"""The site's limits a sweep must respect (``MaxArraySize``, jobs per user) and the user's
default account, asked once per process and kept. What cannot be asked means Slurm's
default array size and no jobs-per-user limit: never refuse what the cluster might accept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from ..core import sweep
from ..core.users import login_name
from . import commands
from .cluster import config_text

CACHE_TTL_S = 3600.0
_cache: dict[Hashable, tuple[float, Any]] = {}
T = TypeVar("T")


def cached(key: Hashable, compute: Callable[[], T], ttl_s: float = CACHE_TTL_S) -> T:
    """``compute()``'s value, kept ``ttl_s`` (what it raises is not kept: asked again)."""
    hit = _cache.get(key)
    if hit is None or time.monotonic() - hit[0] >= ttl_s:
        hit = _cache[key] = (time.monotonic(), compute())
    value: T = hit[1]
    return value


def remember(key: Hashable, value: object) -> None:
    """Set a cached answer (``max_array_size``, ``submit_limit:ACCOUNT``)."""
    _cache[key] = (time.monotonic(), value)


def forget() -> None:
    """Drop every kept answer (the next check asks again)."""
    _cache.clear()
    config_text.cache_clear()


def answered(argv: list[str], ttl_s: float = math.inf) -> str | None:
    """The command's stdout, kept ``ttl_s`` (by default the session); ``None`` when it
    could not be asked or failed."""
    return cached(tuple(argv), lambda: commands.output(argv, timeout=20.0), ttl_s)


def max_array_size() -> int:
    """The cluster's ``MaxArraySize`` (tasks per array; Slurm's 1001 when unknown)."""
    return cached("max_array_size", lambda: sweep.max_array_size(config_text()))


def _sacctmgr(*args: str) -> str:
    return answered(["sacctmgr", "-n", "-P", "show", *args], CACHE_TTL_S) or ""


def association_limits(user: str, account: str | None) -> tuple[int, str] | None:
    """The smallest ``MaxSubmitJobs`` of the user's associations and QOS (sacctmgr), enforced
    or not. ``where`` and ``user=`` are separate words: sacctmgr refuses ``"where user=U"``."""
    associations = _sacctmgr("assoc", "where", f"user={user}", "format=Account,MaxSubmit,QOS")
    chosen = account or default_account(user)
    return sweep.max_submit_jobs(associations, _sacctmgr("qos", "format=Name,MaxSubmitPU"),
                                 chosen)


def default_account(user: str | None = None) -> str | None:
    """The user's default account, as sacctmgr names it (None: none)."""
    return _sacctmgr("user", user or login_name(), "format=DefaultAccount").strip() or None


def submit_limit(user: str, account: str | None) -> tuple[int, str] | None:
    """The user's jobs-per-user limit (``MaxSubmitJobs``) and its source, when enforced."""
    def ask() -> tuple[int, str] | None:
        if not sweep.limits_enforced(config_text()):
            return None  # the controller enforces no association or QOS limit
        return association_limits(user, account)

    return cached(f"submit_limit:{account or ''}", ask)


def queued_jobs(view_jobs: Iterable[Any]) -> int:
    """How many jobs the user has in the queue: an array's pending range counts each task."""
    from ..core.jobids import parse_job_id

    count = 0
    for job in view_jobs:
        parsed = parse_job_id(job.job_id)
        numbers = parsed.task_numbers if parsed is not None else None
        count += len(numbers) if numbers else 1
    return count
