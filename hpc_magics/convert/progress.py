"""``tqdm.notebook`` draws a widget; in a batch job it must be plain tqdm, writing to the log."""

from __future__ import annotations

import ast

from ._source import SourceEditor

_NOTEBOOK_MODULES = {"tqdm.notebook", "tqdm.notebook_tqdm"}
#: ``from tqdm import X``: the plain twin of each notebook name (``notebook``: the module)
_PLAIN_NAMES = {"tqdm_notebook": "tqdm", "tnrange": "trange", "notebook": "std"}


def plain_progress_bars(source: str) -> str:
    """``source`` with every notebook progress bar replaced by its plain tqdm twin."""
    if "tqdm" not in source:
        return source
    try:
        nodes = list(ast.walk(ast.parse(source)))
    except SyntaxError:  # IPython syntax left in (a notebook job): line by line, if lines
        lines = source.splitlines(keepends=True)
        return source if len(lines) == 1 else "".join(
            line[: len(line) - len(line.lstrip())] + plain_progress_bars(line.lstrip())
            for line in lines)
    editor = SourceEditor(source)
    for node in nodes:
        if (replacement := _replacement(node)) is not None:
            editor.replace_node(node, replacement)
    return editor.result()


def _replacement(node: ast.AST) -> str | None:
    if isinstance(node, ast.ImportFrom) and node.level == 0 and (
            node.module in _NOTEBOOK_MODULES or (node.module == "tqdm" and any(
                a.name in _PLAIN_NAMES for a in node.names))):
        names = [ast.alias(_PLAIN_NAMES[a.name], a.asname or a.name)
                 if node.module == "tqdm" and a.name in _PLAIN_NAMES else a for a in node.names]
        return ast.unparse(ast.ImportFrom("tqdm", names, 0))
    if isinstance(node, ast.Import) and any(a.name in _NOTEBOOK_MODULES for a in node.names):
        return ast.unparse(ast.Import([ast.alias("tqdm", a.asname) if a.name in _NOTEBOOK_MODULES
                                       else a for a in node.names]))
    if isinstance(node, ast.Attribute) and node.attr == "notebook" and \
            isinstance(node.value, ast.Name) and node.value.id == "tqdm":
        return "tqdm"
    return None

