"""The errors users see. One line each, naming the bad value and the fix."""

from __future__ import annotations


class HpcMagicsError(Exception):
    """Base class: a problem the user can fix; rendered as one line."""


class InvalidRequest(HpcMagicsError):
    """A resource request or flag is malformed or not allowed by the cluster."""


class ShippingError(HpcMagicsError):
    """The cell's state cannot be shipped to the job."""


class SubmissionError(HpcMagicsError):
    """The scheduler refused the job, or it could not be reached."""


class JobFailed(HpcMagicsError):
    """The job ended without results; carries the remote traceback when there is one."""

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        super().__init__(message)
        self.remote_traceback = remote_traceback
