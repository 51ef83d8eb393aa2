"""Free-name analysis of a cell, on its syntax tree.

A name is *free* when the cell reads it before binding it unconditionally at top level
(``model = train(model)`` reads ``model``), or when a function or class defined in the
cell reads it as a global.  Those names, when the notebook has them, are what to ship.
"""

from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass

from ..core.errors import InvalidRequest


@dataclass(frozen=True)
class CellNames:
    free: tuple[str, ...]  # read before bound: candidates to ship
    # bound in the module's namespace (also by ``global`` in a function): the cell's results
    assigned: tuple[str, ...]
    has_final_expression: bool


def parse_cell(code: str, filename: str = "<cell>") -> ast.Module:
    """Parse, turning a syntax error into a one-line message with the line number."""
    try:
        module = ast.parse(code, filename=filename)
        # parsing alone accepts 'return', 'yield' and 'await' outside a function; the
        # node's exec would not
        compile(module, filename, "exec", dont_inherit=True)
        return module
    except ValueError as error:  # a null byte, on Python versions that say so this way
        raise InvalidRequest(f"the cell has a syntax error at the cell ({error}): fix it and "
                             "run again") from None
    except SyntaxError as error:
        where = f"line {error.lineno}" if error.lineno else "the cell"
        text = (error.text or "").strip()
        shown = f": {text}" if text else ""
        raise InvalidRequest(
            f"the cell has a syntax error at {where} ({error.msg}){shown}: fix it and run again"
        ) from None


def _scan(source: str) -> tuple[set[str], list[str]]:
    """Names one statement reads from the module's namespace, and the names it binds there
    (at top level, or in a nested scope through ``global`` or a comprehension's ``:=``)."""
    table = symtable.symtable(source, "<cell>", "exec")
    reads = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_referenced()}
    binds = [symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()]

    def visit(child: symtable.SymbolTable) -> None:
        for symbol in child.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and (symbol.is_global() or (
                    symbol.is_free() and child.get_type() == "class")):
                reads.add(name)
            if symbol.is_declared_global() and symbol.is_assigned() and name not in binds:
                binds.append(name)
        for grandchild in child.get_children():
            visit(grandchild)

    for child in table.get_children():
        visit(child)
    return reads, binds


# statements that bind unconditionally (not inside if/for/while/try)
_ALWAYS_BINDS = (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
                 ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith)


def analyse(code: str) -> CellNames:
    """Free and assigned names of a cell."""
    module = parse_cell(code)
    bound: set[str] = set()
    free: list[str] = []
    assigned: list[str] = []
    for statement in module.body:
        reads, names = _scan(ast.unparse(statement))
        for name in sorted(reads):
            if name not in bound and name not in free:
                free.append(name)
        if isinstance(statement, ast.Delete):  # symtable counts ``del x`` as binding x
            names = []
        for name in names:
            if name not in assigned:
                assigned.append(name)
        if isinstance(statement, _ALWAYS_BINDS):
            bound.update(names)
    has_final = bool(module.body) and isinstance(module.body[-1], ast.Expr)
    return CellNames(tuple(free), tuple(assigned), has_final)
