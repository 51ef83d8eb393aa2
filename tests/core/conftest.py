"""Fixtures shared by the pure-core tests."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from hpc_magics.node import task as scale


@pytest.fixture
def restored_signal_handlers() -> Iterator[None]:
    """The scale runner installs signal handlers and module state in-process: put them back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR2, signal.SIGTERM,
                                                    signal.SIGCONT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    scale.resumed = False
    scale._CURRENT = None
