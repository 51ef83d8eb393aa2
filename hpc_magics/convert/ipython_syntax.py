"""IPython's own reading of a cell: its prefilter (automagics, aliases) and its alias table.

A one-line cell such as ``ls``, ``cat data.txt``, ``cd results`` or ``pip install rich``
is a magic in IPython (automagic) when no variable of that name hides it; IPython decides
that in its prefilter, and only for one-line cells.  Rather than guess, the converter asks a
private IPython shell the same question, with the names the notebook has bound so far in its
namespace.

The shell is private: not IPython's singleton, its own ``user_module`` (never
``sys.modules["__main__"]``), and what its constructor sets for interactive sessions
(``sys.ps1``, ``builtins.display``, the exit hook) is put back, so converting inside a kernel
or a Jupyter server changes nothing there.
"""

from __future__ import annotations

import atexit
import builtins
import sys
import types
from collections.abc import Collection
from functools import cache
from typing import Any

_SENTINEL = object()


@cache
def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    touched = ((vars(builtins), ("__IPYTHON__", "display")), (vars(sys), ("ps1", "ps2")))
    saved = [(space, key, space.get(key, _SENTINEL)) for space, keys in touched for key in keys]
    shell = InteractiveShell(
        config=config, user_module=types.ModuleType("_hpc_magics_prefilter_namespace")
    )
    atexit.unregister(shell.atexit_operations)
    for space, key, value in saved:  # what the constructor set for an interactive session
        if value is _SENTINEL:
            space.pop(key, None)
        else:
            space[key] = value
    return shell


def prefilter_line(line: str, bound: Collection[str] = ()) -> str:
    """One line as IPython runs it as a whole cell: ``cd data`` → a ``%cd`` magic call.

    ``bound``: the names the notebook has defined so far; they hide magics of the same name,
    as in IPython (``ls = [1]`` then ``ls`` shows the list).
    """
    shell = _shell()
    namespace = shell.user_ns
    added = [name for name in bound if name not in namespace]
    namespace.update(dict.fromkeys(added))
    try:
        return str(shell.prefilter_manager.prefilter_lines(line.rstrip("\n")))
    finally:
        for name in added:
            namespace.pop(name, None)


def alias_command(name: str, rest: str) -> str | None:
    """The shell command IPython's alias ``name`` runs with arguments ``rest``, if an alias.

    IPython's ``Alias.call``: ``%l`` takes the whole line; otherwise the line is appended.
    Aliases with ``%s`` placeholders are left to IPython's shell (None).
    """
    manager = _shell().alias_manager
    if not manager.is_alias(name):
        return None
    command = str(manager.get_alias(name).cmd)
    if "%l" in command:
        return command.replace("%l", rest)
    if command.replace("%%s", "").count("%s"):
        return None
    return f"{command.replace('%%s', '%s')} {rest}".rstrip()
