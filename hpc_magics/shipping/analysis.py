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
    assigned: tuple[str, ...]  # bound at top level: the cell's results
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


def _global_reads(source: str) -> set[str]:
    """Names one statement reads from the module's namespace (nested scopes included)."""
    reads: set[str] = set()
    table = symtable.symtable(source, "<cell>", "exec")
    for symbol in table.get_symbols():
        if symbol.is_referenced():
            reads.add(symbol.get_name())

    def visit(child: symtable.SymbolTable) -> None:
        for symbol in child.get_symbols():
            if symbol.is_global() and symbol.is_referenced():
                reads.add(symbol.get_name())
            if symbol.is_free() and child.get_type() == "class" and symbol.is_referenced():
                reads.add(symbol.get_name())
        for grandchild in child.get_children():
            visit(grandchild)

    for child in table.get_children():
        visit(child)
    return reads


def _bound_names(statement: ast.stmt) -> list[str]:
    """Names a top-level statement binds in the module namespace."""
    names: list[str] = []

    def targets(node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                targets(element)
        elif isinstance(node, ast.Starred):
            targets(node.value)

    for node in ast.walk(statement):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node is statement or _is_top_level_binding(statement, node):
                names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.append(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                targets(target)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    targets(item.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            targets(node.target)
    return names


def _is_top_level_binding(statement: ast.stmt, node: ast.AST) -> bool:
    """A def/class nested in if/for/with/try at top level still binds a module name."""
    for parent in ast.walk(statement):
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if parent is not node and node in ast.walk(parent):
                return False
    return True


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
        segment = ast.unparse(statement)
        for name in sorted(_global_reads(segment)):
            if name not in bound and name not in free:
                free.append(name)
        names = _bound_names(statement)
        for name in names:
            if name not in assigned:
                assigned.append(name)
        if isinstance(statement, _ALWAYS_BINDS):
            bound.update(names)
    has_final = bool(module.body) and isinstance(module.body[-1], ast.Expr)
    return CellNames(tuple(free), tuple(assigned), has_final)
