"""What is left of the account's allocation, for the status bar: asked rarely, kept between.

Slurm knows it where the site sets ``GrpTRESMins`` on the account (``sshare``: limit and
usage in one answer); a profile may name the site's own ``balance_command`` instead (its
first line is shown as it is). Asked through the server's ``AskedRarely`` (``extension.py``):
one question per ``allocation_refresh_minutes`` (10 by default), whatever the number of tabs.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.profiles import load_profile
from ..scheduler.allocation import Allocation, ask_sshare, site_balance
from ..scheduler.limits import default_account

ACCOUNT_VARIABLES = ("SBATCH_ACCOUNT", "SLURM_ACCOUNT", "SALLOC_ACCOUNT")


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
    site = load_profile(profile) if profile else None
    if site is not None and site.balance_command:
        answered, said = site_balance(site, timeout_s)
        return {"account": account, "text": said, "low": False, "left_h": None,
                "limit_h": None, "title": f"{site.balance_command[0]} (the site's balance "
                                          "command)"} if answered else None
    if not account:
        return None
    found = ask_sshare(account, timeout_s)
    return None if found is None else allocation_json(found, low_fraction)
