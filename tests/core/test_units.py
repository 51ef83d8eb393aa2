from __future__ import annotations

import pytest

from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.units import (
    UNLIMITED,
    format_duration,
    format_memory,
    format_time,
    parse_memory,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 30 * 60),  # MM
        ("360", 6 * 3600),  # minutes only, as real scripts write -t 360
        ("10:30", 10 * 60 + 30),  # MM:SS
        ("02:00:00", 7200),  # HH:MM:SS
        ("12:0:0", 12 * 3600),  # H:M:S
        ("1-12", 36 * 3600),  # D-HH
        ("2-00:30", 48 * 3600 + 1800),  # D-HH:MM
        ("1-02:03:04", 86400 + 2 * 3600 + 3 * 60 + 4),  # D-HH:MM:SS
        ("2h", 7200),
        ("90min", 5400),
        ("1d12h", 36 * 3600),
        ("45s", 45),
        ("'02:00:00'", 7200),  # quoted, as pasted from scripts
        ("infinite", UNLIMITED),
        ("0", UNLIMITED),
    ],
)
def test_parse_time_accepts_sbatch_and_human_formats(text: str, seconds: int) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["2 hours please", "1:2:3:4", "abc", "-5", "1ß", "2x"])
def test_parse_time_rejects_with_one_line_fix(text: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        parse_time(text)
    message = str(raised.value)
    assert "\n" not in message and repr(text.strip()) in message and "HH:MM:SS" in message


def test_time_round_trips_through_slurm_format() -> None:
    for seconds in (59, 3600, 86399, 86400 + 61, 7 * 86400):
        assert parse_time(format_time(seconds)) == seconds
    assert format_time(93784) == "1-02:03:04"
    assert format_time(UNLIMITED) == "UNLIMITED"


def test_format_duration_is_short() -> None:
    assert format_duration(3 * 3600 + 12 * 60 + 5) == "3h12m"
    assert format_duration(45 * 60) == "45m"
    assert format_duration(2 * 86400 + 4 * 3600) == "2d4h"
    assert format_duration(40) == "40s"
    assert format_duration(-5) == "0s"


@pytest.mark.parametrize(("text", "megabytes"), [
    ("4G", 4096), ("500M", 500), ("500", 500), ("1T", 1024 * 1024), ("2GB", 2048),
    ("460000", 460000), ("0", 0), ("1.5G", 1536), ("512K", 1),
])
def test_parse_memory(text: str, megabytes: int) -> None:
    assert parse_memory(text) == megabytes


def test_parse_memory_rejects() -> None:
    with pytest.raises(InvalidRequest, match=r"'4 gigs'.*'4G'"):
        parse_memory("4 gigs")


def test_format_memory_prefers_whole_units() -> None:
    assert format_memory(4096) == "4G"
    assert format_memory(1000) == "1000M"
    assert format_memory(2 * 1024 * 1024) == "2T"
