"""What is left of the account's allocation, where Slurm knows it, beside a request's cost.

Slurm knows an allocation when the site sets a ``GrpTRESMins`` limit on the account's
association; ``sshare`` gives that limit and the usage so far (``GrpTRESRaw``), asked at
most once in ``ALLOCATION_MAX_AGE_S`` per account. Sites that keep balances elsewhere name
their own command in the profile (``balance_command``): its first line is shown as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.efficiency import tres
from ..core.errors import HpcMagicsError
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from . import commands
from .limits import cached, default_account

TRES_ORDER = ("billing", "cpu")  # which limit counts, when the site sets several
ALLOCATION_MAX_AGE_S = 300.0  # usage moves by the hour: one sshare per account in 5 minutes


@dataclass(frozen=True)
class Allocation:
    account: str
    tres: str  # "billing" or "cpu"
    limit_min: float | None  # None: Slurm sets no limit
    used_min: float

    @property
    def left_min(self) -> float | None:
        return None if self.limit_min is None else max(0.0, self.limit_min - self.used_min)


def _tres(text: str) -> dict[str, float]:
    """``billing=600,cpu=300`` as numbers (one that is not a number is left out)."""
    return {k: float(v) for k, v in tres(text).items() if v.replace(".", "", 1).isdigit()}


def parse_sshare(text: str, account: str) -> Allocation | None:
    """The account's own line (no user) of ``sshare -n -P -o
    Account,User,GrpTRESMins,GrpTRESRaw``."""
    for line in text.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 4 or fields[0] != account or fields[1]:
            continue
        limits, used = _tres(fields[2]), _tres(fields[3])
        tres = next((t for t in TRES_ORDER if t in limits), "billing")
        return Allocation(account, tres, limits.get(tres), used.get(tres, 0.0))
    return None


def requested_minutes(request: ResourceRequest) -> float | None:
    """CPU-minutes the request may use at most (billing counted as CPUs: no weights)."""
    hours = request.node_hours()
    cpus = (request.ntasks_per_node or 1) * (request.cpus_per_task or 1)
    return None if hours is None else hours * 60 * cpus


def ask_sshare(account: str, timeout_s: float = 20.0) -> Allocation | None:
    """What sshare says of the account now (None: nothing); ``HpcMagicsError`` when it
    cannot be asked (a time-out)."""
    shares = commands.run(["sshare", "-n", "-P", "-A", account, "-o",
                           "Account,User,GrpTRESMins,GrpTRESRaw"], timeout=timeout_s)
    return parse_sshare(shares.stdout, account) if shares.ok else None


def site_balance(profile: ClusterProfile, timeout_s: float = 20.0) -> tuple[bool, str]:
    """Whether the site's own balance command (the profile names it) answered, and its
    first line (else why not). The site's tool missing is said, never refused."""
    try:
        answer = commands.run(list(profile.balance_command), timeout=timeout_s)
    except HpcMagicsError as error:
        return False, f"could not run ({error})"
    first = next((line.strip() for line in answer.stdout.splitlines() if line.strip()), "")
    return (True, first) if answer.ok and first else (False, answer.first_error_line())


def site_balance_line(profile: ClusterProfile) -> str:
    return f"allocation ({profile.balance_command[0]}): {site_balance(profile)[1]}"


def allocation_lines(request: ResourceRequest, profile: ClusterProfile) -> list[str]:
    """One line on what is left (and a warning line when the request needs more)."""
    if profile.balance_command:
        return [site_balance_line(profile)]
    account = request.account or default_account()
    return account_lines(account, (), request) if account else [NO_ACCOUNT]


NO_ACCOUNT = "allocation: unknown (no account named, and Slurm gave no default account)"


def account_lines(account: str, left_in_jobs_min: Iterable[float],
                  request: ResourceRequest | None = None) -> list[str]:
    """What is left of ``account``, and a warning when ``request`` may use more, or when
    the queued and running jobs' requests (``left_in_jobs_min``: CPU-minutes each may
    still use) add up to more."""
    try:  # sshare's answer, asked again after the cache ages
        found = cached(f"allocation:{account}", lambda: ask_sshare(account),
                       ALLOCATION_MAX_AGE_S)
    except HpcMagicsError:  # the controller is busy: said as "says nothing", asked again later
        found = None
    if found is None:
        return [f"allocation: sshare says nothing about account {account}"]
    lines = describe(found, request or ResourceRequest())
    wanted = list(left_in_jobs_min)
    if found.left_min is not None and sum(wanted) > found.left_min:
        lines.append(f"warning: your {len(wanted)} queued and running jobs on account "
                     f"{account} may use {sum(wanted) / 60:.1f} {found.tres}-hours, more "
                     f"than the {found.left_min / 60:.1f} left")
    return lines


def describe(found: Allocation, request: ResourceRequest) -> list[str]:
    """What is left of ``found``, and a warning when ``request`` may use more."""
    account = found.account
    used_h = found.used_min / 60
    if found.limit_min is None:
        return [f"allocation: Slurm sets no limit for account {account} "
                f"({used_h:.1f} {found.tres}-hours used)"]
    left_h = (found.left_min or 0.0) / 60
    lines = [f"allocation: {left_h:.1f} of {found.limit_min / 60:.1f} {found.tres}-hours left "
             f"for account {account}"]
    wanted = requested_minutes(request)
    if wanted is not None and found.left_min is not None and wanted > found.left_min:
        lines.append(f"warning: this job may use {wanted / 60:.1f} {found.tres}-hours, more "
                     f"than the {left_h:.1f} left of account {account}")
    return lines
