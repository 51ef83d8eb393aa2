"""What %%sbatch makes of a cell's text: IPython syntax as plain Python, and for
``--replay`` the notebook's earlier cells, with earlier %%sbatch jobs' results shipped
instead of running those jobs again."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from ..core.errors import HpcMagicsError


def plain_python(body: str) -> tuple[str, str]:
    """A cell with IPython syntax (``!cmd``, ``%time``, ``%%bash``) as plain Python.

    Returns the translated cell and the helper code it needs; a cell that is already plain
    Python comes back unchanged, and one that is not valid either way is left for the
    syntax check to report.
    """
    try:
        ast.parse(body)
        return body, ""
    except (SyntaxError, ValueError):  # ValueError: a null byte, on some 3.11 releases
        pass
    from ..convert.magics import translate_magics
    from ..convert.script import helper_code

    try:
        translated = translate_magics(body)
    except (SyntaxError, ValueError):
        return body, ""
    return translated.source, helper_code(translated.needs)


def sbatch_body(source: str) -> str | None:
    """The body of a ``%%sbatch`` cell, raw or as IPython's history stores it; else None."""
    if source.lstrip().startswith("%%sbatch"):
        return source.lstrip().partition("\n")[2]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        call = tree.body[0].value
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "run_cell_magic" and len(call.args) == 3
                and isinstance(call.args[0], ast.Constant) and call.args[0].value == "sbatch"
                and isinstance(call.args[2], ast.Constant)
                and isinstance(call.args[2].value, str)):
            return call.args[2].value
    return None


def replay_payload(shell: Any, body: str, names: Any, max_shipped_mb: float) -> Any:
    """What ``%%sbatch --replay`` ships: the earlier cells' source, and the results of the
    earlier %%sbatch cells among them."""
    from ..convert.replay import replay_source
    from ..shipping.analysis import CellNames, analyse
    from ..shipping.packing import pack

    history: list[str] = []
    if shell is not None:
        # In[1:N] are the cells run before this one (In[N] is this cell, in a kernel)
        history = list(shell.user_ns.get("In", [""])[1:shell.execution_count])
    # Earlier %%sbatch cells may have run for hours: ship their fetched results instead
    # of running them again.
    earlier_results: list[str] = []
    replayed: list[str] = []
    for source in history:
        job_body = sbatch_body(source)
        if job_body is None:
            replayed.append(source)
            continue
        try:
            earlier_results += [n for n in analyse(job_body).assigned
                                if n not in earlier_results]
        except HpcMagicsError:
            continue  # it failed in the notebook too
    namespace = shell.user_ns if shell else {}
    missing = [n for n in earlier_results if n not in namespace and n in names.free]
    if missing:
        raise HpcMagicsError(
            f"{', '.join(repr(n) for n in missing)} would come from an earlier %%sbatch job "
            "whose results are not in the notebook: %hpc_fetch that job first")
    results = pack("", CellNames(tuple(n for n in earlier_results if n in namespace), (),
                                 False), namespace, max_shipped_mb)
    return replace(results, code=replay_source(replayed, body),
                   result_names=names.assigned,
                   capture_last_expression=names.has_final_expression,
                   replayed_cells=len(replayed))
