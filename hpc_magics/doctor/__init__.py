"""``hpc-magics doctor`` and ``%hpc_doctor``: does this installation work where it runs?

One set of checks (``checks.CHECKS``), one line each saying what holds or what to fix; the
command line (``command.py``) and the magic (``magics/doctor.py``) only build the
``Setting`` and print :func:`lines`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass

from ..core.errors import HpcMagicsError
from .checks import CHECKS, FAIL, OK, Setting


@dataclass(frozen=True)
class Finding:
    check: str  # the check function's name: the JSON key
    topic: str
    status: str  # ok, warn, fail
    line: str


def run(setting: Setting) -> list[Finding]:
    """Every check, in order. The test job's folder goes when all held (else its logs
    stay, for the line that names it)."""
    found = []
    for topic, check in CHECKS:
        try:
            status, line = check(setting)
        except HpcMagicsError as error:
            status, line = FAIL, str(error)
        found.append(Finding(check.__name__, topic, status, line))
    ran = setting._probe
    if ran is not None and ran.folder is not None:
        if ran.job_id and any(f.status == FAIL for f in found):
            setting.say(f"hpc-magics doctor: the test job's files are kept in {ran.folder}")
        else:
            shutil.rmtree(ran.folder, ignore_errors=True)
    return found


def lines(found: list[Finding]) -> list[str]:
    return [f"{f.status:<4}  {f.topic}: {f.line}" for f in found]


def exit_status(found: list[Finding]) -> int:
    """0 when nothing failed (warnings do not fail), else 1."""
    return 1 if any(f.status == FAIL for f in found) else 0


def as_json(found: list[Finding]) -> str:
    return json.dumps({"ok": exit_status(found) == 0,
                       "checks": [asdict(f) for f in found]}, indent=1)


__all__ = ["OK", "Finding", "Setting", "as_json", "exit_status", "lines", "run"]
