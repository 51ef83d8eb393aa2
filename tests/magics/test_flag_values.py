"""A flag's value that starts with '-' is its value, as sbatch (getopt) takes the next word:
``--mem -1G`` used to end in argparse's "expected one argument", which names no value."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError


@pytest.mark.parametrize(("line", "said"), [
    ("--mem -1G", "memory '-1G' must be positive, e.g. '4G'"),
    ("--mem=-1G", "memory '-1G' must be positive, e.g. '4G'"),
    ("-t -5", "'-5'"),
    ("-p debug -N -2", "--nodes '-2' must be a whole number of at least 1"),
])
def test_a_negative_value_is_named(shell: Any, line: str, said: str) -> None:
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("hpc_resources", line)
    assert said in str(refused.value) and "expected one argument" not in str(refused.value)


def test_a_flag_at_the_end_still_wants_its_value(shell: Any) -> None:
    with pytest.raises(UsageError, match="-t/--time: expected one argument"):
        shell.run_line_magic("hpc_resources", "--mem 4G -t")


def test_a_flag_of_the_magic_is_not_taken_as_a_value(shell: Any) -> None:
    """``-J --wait`` forgot the name: it is not a job named --wait."""
    with pytest.raises(UsageError, match="-p/--partition: expected one argument"):
        shell.run_line_magic("hpc_resources", "-p --reset")
