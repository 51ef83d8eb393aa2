"""The reference's Python section: the package's functions and the job handles' members,
from their signatures and docstrings."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from .markdown import cell, prose


def _call(name: str, function: Any) -> str:
    """``name(a, b=1)``: the parameters without their annotations, nor ``self``."""
    signature = inspect.signature(function)
    parameters = [p.replace(annotation=inspect.Parameter.empty)
                  for p in signature.parameters.values() if p.name != "self"]
    return name + str(signature.replace(parameters=parameters,
                                        return_annotation=inspect.Signature.empty))


def _first_paragraph(member: Any) -> str:
    return prose(inspect.getdoc(member)).split("\n\n")[0]


def _members_table(cls: type) -> Iterator[str]:
    """The public methods and properties the class itself defines, with their docstrings."""
    yield "| member | what it does |"
    yield "|---|---|"
    for name, member in vars(cls).items():
        if name.startswith("_") or not (callable(member) or isinstance(member, property)):
            continue
        spelled = f".{name}" if isinstance(member, property) else _call(f".{name}", member)
        yield f"| `{spelled}` | {cell(_first_paragraph(member)) or '—'} |"


def python_section() -> Iterator[str]:
    import hpc_magics
    from hpc_magics.handle import JobHandle
    from hpc_magics.sweep_handle import SweepHandle

    yield "## Python"
    yield ""
    yield "| name | what it does |"
    yield "|---|---|"
    for name in ("job", "checkpoint"):
        function = getattr(hpc_magics, name)
        yield f"| `{_call('hpc_magics.' + name, function)}` | {cell(_first_paragraph(function))} |"
    yield ("| `hpc_magics.resumed` | In a `%%sbatch --checkpoint` job: true when the cell runs "
           "again after a requeue, with its checkpointed variables restored. |")
    for cls in (JobHandle, SweepHandle):
        yield ""
        yield f"### `{cls.__name__}`"
        yield ""
        yield _first_paragraph(cls)
        yield ""
        yield from _members_table(cls)
