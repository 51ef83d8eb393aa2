"""``%%sbatch --session NAME``: a cell run in a session's kernel (hpc_magics/kernel/session.py).

Apart from ``kernel/magics.py`` (which builds on ``%%sbatch``'s arguments) so that the two
magics modules do not import each other.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError

from ..core.errors import HpcMagicsError
from ..kernel import session as sessions


def run_in_session(shell: Any, name: str, cell: str) -> None:
    """The cell in the session; its assigned names come back."""
    try:
        session = sessions.get(name)
        on = f" on {session.host}" if session.host else ""
        print(f"[hpc_magics] session {name}: job {session.job_id}{on} runs this cell")
        session.run(cell, shell.user_ns)
    except HpcMagicsError as error:
        remote = getattr(error, "remote_traceback", "")
        if remote:
            print(remote, file=sys.stderr)
        raise UsageError(str(error)) from None
