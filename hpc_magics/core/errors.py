"""The errors users see. One line each, naming the bad value and the fix."""

from __future__ import annotations

from collections.abc import Callable, Sequence


class HpcMagicsError(Exception):
    """Base class: a problem the user can fix; rendered as one line."""


class InvalidRequest(HpcMagicsError):
    """A resource request or flag is malformed or not allowed by the cluster."""


def refuse(problems: Sequence[str]) -> None:
    """Refuse in one line when anything was found: the problem itself, or ``N problems:
    first; second`` (all at once: one round of fixes)."""
    if problems:
        raise InvalidRequest(problems[0] if len(problems) == 1
                             else f"{len(problems)} problems: " + "; ".join(problems))


class ShippingError(HpcMagicsError):
    """The cell's state cannot be shipped to the job."""


class SubmissionError(HpcMagicsError):
    """The scheduler refused the job, or it could not be reached."""


class JobFailed(HpcMagicsError):
    """The job ended without results; carries the remote traceback when there is one.

    IPython shows it as its one line: a traceback through hpc_magics' own fetch says
    nothing about the job. A magic makes it a ``UsageError``, but for a failure that shows
    the node's traceback (``handle.RemoteError``: the cell raised)."""

    shows_node_traceback = False

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


# called with each failure a fetch brings back from the node, before it is raised, however
# the fetch was asked for (a cell, the widget's button): the shell keeps its node frames for
# %debug and %tb (``magics/postmortem.py``); here, as loading the magics loads nothing more
FETCHED_FAILURE_HOOKS: list[Callable[[JobFailed], None]] = []


class InternalBug(HpcMagicsError):
    """hpc_magics itself went wrong (a parser that met a line it cannot read, ...): said as
    a bug to report, never as the scheduler being unreachable."""


_reported: set[str] = set()


def report_bug(doing: str, error: BaseException) -> InternalBug:
    """Log ``error`` (with its traceback, once per kind of failure) and return the one line
    that says it is hpc_magics' bug, for the caller to raise or show."""
    import logging

    what = f"{type(error).__name__}: {error}"
    if what not in _reported:
        _reported.add(what)
        logging.getLogger("hpc_magics").error("hpc_magics bug while %s", doing,
                                              exc_info=error)
    return InternalBug(f"hpc_magics bug while {doing} ({what}): please report it with the "
                       "log's traceback (logger 'hpc_magics')")
