"""What %%sbatch makes of a cell's text: IPython syntax as plain Python (apart from
``convert/``, which it imports only for a cell that is not plain Python already)."""

from __future__ import annotations

import ast


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
