"""Who a number is: the one lookup of user and group names (``pwd``, ``grp``)."""

from __future__ import annotations

import os


def user_name(uid: int, group: bool = False) -> str:
    """The name of user ``uid`` (of group ``uid``, with ``group``), else ``uid N``."""
    import grp
    import pwd

    try:
        return grp.getgrgid(uid).gr_name if group else pwd.getpwuid(uid).pw_name
    except KeyError:  # a user this host does not know
        return f"{'gid' if group else 'uid'} {uid}"


def login_name() -> str:
    """The account this process runs as; ``$USER`` can be stale (``sudo``, ``su`` without -l)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # no passwd entry (some containers): the environment is all there is
        return os.environ.get("USER") or os.environ.get("LOGNAME") or str(os.getuid())
