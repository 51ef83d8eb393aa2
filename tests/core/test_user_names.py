"""The one lookup of user and group names (``core/users.py``)."""

from __future__ import annotations

import os
import pwd

from hpc_magics.core.jobs import cancelled_by
from hpc_magics.core.users import login_name, user_name

NOBODY_KNOWS = 3_999_999  # a uid and gid no passwd or group file here lists


def test_a_number_nobody_knows_is_said_as_a_number() -> None:
    assert user_name(NOBODY_KNOWS) == f"uid {NOBODY_KNOWS}"
    assert user_name(NOBODY_KNOWS, group=True) == f"gid {NOBODY_KNOWS}"
    assert user_name(os.getuid()) == pwd.getpwuid(os.getuid()).pw_name == login_name()


def test_who_cancelled_is_named_once_the_same_way() -> None:
    assert cancelled_by(f"CANCELLED by {NOBODY_KNOWS}") == f" by uid {NOBODY_KNOWS}"
    assert cancelled_by(f"CANCELLED by {os.getuid()}") == " by you"
