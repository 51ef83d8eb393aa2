"""What is left of the account's allocation, for the status bar: asked rarely, kept between.

Slurm knows it where the site sets ``GrpTRESMins`` on the account (``sshare``: limit and
usage in one answer); a profile may name the site's own ``balance_command`` instead (its
first line is shown as it is). One question per ``refresh_s`` (10 minutes by default) in a
worker thread, whatever the number of tabs; requests get the last answer at once.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import HpcMagicsError
from ..core.profiles import load_profile
from ..scheduler import commands
from ..scheduler.allocation import Allocation, ask_sshare
from ..scheduler.limits import default_account

ACCOUNT_VARIABLES = ("SBATCH_ACCOUNT", "SLURM_ACCOUNT", "SALLOC_ACCOUNT")
FIRST_ANSWER_WAIT_S = 0.5


def chosen_account(configured: str, environ: dict[str, str] | None = None) -> str | None:
    """The configured account, else the user's own default (``SBATCH_ACCOUNT`` & co.),
    else Slurm's default account of the user."""
    env = os.environ if environ is None else environ
    return configured or next((env[v] for v in ACCOUNT_VARIABLES if env.get(v)), None) \
        or default_account()


def allocation_json(found: Allocation, low_fraction: float) -> dict[str, Any]:
    hours = found.tres + "-h"
    if found.limit_min is None:
        return {"account": found.account, "text": f"{found.account}: no limit set",
                "title": f"Slurm sets no limit for account {found.account} "
                         f"({found.used_min / 60:.1f} {hours} used)", "low": False,
                "left_h": None, "limit_h": None}
    left_h, limit_h = (found.left_min or 0.0) / 60, found.limit_min / 60
    low = found.limit_min > 0 and (found.left_min or 0.0) <= low_fraction * found.limit_min
    return {"account": found.account, "text": f"{found.account}: {left_h:.1f} {hours} left",
            "title": f"{left_h:.1f} of {limit_h:.1f} {hours} left for account "
                     f"{found.account} (sshare; refreshed every few minutes)",
            "low": low, "left_h": round(left_h, 3), "limit_h": round(limit_h, 3)}


def read_allocation(account: str | None, profile: str, low_fraction: float,
                    timeout_s: float) -> dict[str, Any] | None:
    """The status bar's allocation entry, or None where nothing is known."""
    if profile:
        command = load_profile(profile).balance_command
        if command:
            answer = commands.run(list(command), timeout=timeout_s)
            first = next((line.strip() for line in answer.stdout.splitlines() if line.strip()),
                         "")
            if not answer.ok or not first:
                return None
            return {"account": account, "text": first, "low": False, "left_h": None,
                    "limit_h": None, "title": f"{command[0]} (the site's balance command)"}
    if not account:
        return None
    found = ask_sshare(account, timeout_s)
    return None if found is None else allocation_json(found, low_fraction)


@dataclass
class AllocationWatch:
    """The last answer, and at most one question at a time, no more often than ``refresh_s``."""

    read: Callable[[], dict[str, Any] | None]
    refresh_s: float = 600.0
    log: Any = None
    answer: dict[str, Any] | None = None
    asked_at: float = field(default=-1e18)
    _asking: asyncio.Future[dict[str, Any] | None] | None = None

    async def current(self) -> dict[str, Any] | None:
        if time.time() - self.asked_at >= self.refresh_s and \
                (self._asking is None or self._asking.done()):
            self.asked_at = time.time()
            self._asking = asyncio.get_running_loop().run_in_executor(None, self._read)
            try:  # the first answer is worth half a second; later ones arrive by themselves
                await asyncio.wait_for(asyncio.shield(self._asking), FIRST_ANSWER_WAIT_S)
            except asyncio.TimeoutError:
                pass
        return self.answer

    def _read(self) -> dict[str, Any] | None:
        try:
            self.answer = self.read()
        except HpcMagicsError as error:  # keep the last answer; say why in the server log
            if self.log is not None:
                self.log.warning("hpc_magics: reading the allocation failed: %s", error)
        return self.answer
