"""Pass 1 of ``display.py``: classify every statement of a notebook in execution order,
tracking what names mean (display modules under any alias, figures, axes, widgets) and
which figure groups are kept (saved, or read by kept computation). One expression's kind
(and the syntax questions) is ``display_expressions.py``'s; the rules are data in
``display_rules.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import display_rules as rules
from .display_expressions import (
    ExpressionClassifier,
    bodies,
    executed,
    names_in,
    only_displays,
    role_for_module,
    target_names,
)
from .display_rules import (
    DATA,
    DRAW,
    ECHO,
    IMPORT,
    KEEP,
    PURE_BUILTINS,
    PURE_FUNCTIONS,
    SAVE,
    SHOW,
    STYLE,
)


@dataclass
class Record:
    kind: str
    group: int | None = None
    targets: tuple[str, ...] = ()
    bound: tuple[str, ...] = ()  # names an import binds
    effects: tuple[ast.expr, ...] = ()  # parts of a display call that compute something


@dataclass
class Cell:
    source: str
    tree: ast.Module | None
    keep_all: bool


class Analysis(ExpressionClassifier):
    """Pass 1: what every statement of the notebook is, in execution order."""

    def __init__(self) -> None:
        super().__init__()
        self.records: dict[int, Record] = {}
        self.reads: set[str] = set()  # names read by computation
        self.display_decorators: set[int] = set()  # ``@interact``: ids of decorator nodes
        self.data_names: dict[str, int] = {}  # ``counts`` of ``counts, bins, _ = plt.hist(x)``

    # ------------------------------------------------------------- statements
    def walk_cell(self, tree: ast.Module, keep_all: bool) -> None:
        self.walk_body(tree.body, keep_all, last_is_echo=True)
        self.current = None  # the inline backend closes the cell's figures

    def walk_body(
        self, body: Sequence[ast.stmt], keep_all: bool, last_is_echo: bool = False
    ) -> None:
        for index, statement in enumerate(body):
            last = last_is_echo and index == len(body) - 1
            record = self.statement(statement, keep_all, last)
            if keep_all and record.kind != IMPORT:
                record = Record(KEEP)
            self.records[id(statement)] = record
            if record.kind == KEEP:
                self._read(self._own_expressions(statement))

    def _read(self, nodes: Iterable[ast.AST]) -> None:
        """Computation reads these expressions: any figure they touch must be kept."""
        for node in nodes:
            for name in ast.walk(node):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
                    self.reads.add(name.id)
                    if name.id in self.objects:
                        self.groups.keep(self.objects[name.id])

    def _own_expressions(self, statement: ast.stmt) -> list[ast.AST]:
        """The parts of a statement outside its nested bodies."""
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return [statement.iter]
        if isinstance(statement, (ast.While, ast.If)):
            return [statement.test]
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            return [item.context_expr for item in statement.items]
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [d for d in statement.decorator_list if id(d) not in self.display_decorators]
        if isinstance(statement, ast.Try):
            return [h.type for h in statement.handlers if h.type is not None]
        return [statement]

    def statement(self, node: ast.stmt, keep_all: bool, last: bool) -> Record:
        """What one statement is; nested bodies are walked (and recorded) on the way."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                if not keep_all and self.classify_expression(decorator)[0] == SHOW:
                    self.display_decorators.add(id(decorator))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return self._import(node)
        if isinstance(node, ast.Expr):
            return self._expression(node, last)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self._assignment(node)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return self._loop(node, keep_all)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            kinds = [self.classify_expression(item.context_expr)[0] for item in node.items]
            self.walk_body(node.body, keep_all)
            return Record(STYLE if all(k in {STYLE, DRAW} for k in kinds) else KEEP)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._function(node, keep_all)
        for body in bodies(node):  # if, while, try, class, match: their bodies decide
            self.walk_body(body, keep_all)
        return Record(KEEP)

    def _expression(self, node: ast.Expr, last: bool) -> Record:
        kind, group = self.classify_expression(node.value)
        if kind == KEEP and last and only_displays(node.value):
            return Record(ECHO)
        if kind == SAVE:
            self._read([node.value])  # ``pio.write_image(fig, ...)`` keeps ``fig``
            if group is not None:
                self.groups.keep(group)
        if kind == DRAW and group is not None:
            self._join(node.value, group)
        effects = self._effects(node.value) if kind in {SHOW, DRAW} else ()
        return Record(kind, group, effects=effects)

    def _effects(self, node: ast.expr) -> tuple[ast.expr, ...]:
        """Arguments of a display call that compute something: ``display(next(it))``."""
        found: list[ast.expr] = []
        for call in (n for n in executed(node) if isinstance(n, ast.Call)):
            for argument in [*call.args, *(k.value for k in call.keywords)]:
                value = argument.value if isinstance(argument, ast.Starred) else argument
                if not self._computes_nothing(value):
                    found.append(value)
        # an argument nested in another one that is kept anyway: keep the outer one only
        return tuple(a for a in found if not any(a is not b and a in executed(b) for b in found))

    def _computes_nothing(self, node: ast.AST) -> bool:
        for child in executed(node):
            if isinstance(child, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
                return False
            if isinstance(child, ast.Call) and not self._pure_or_display_call(child):
                return False
        return True

    def _pure_or_display_call(self, call: ast.Call) -> bool:
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr in PURE_FUNCTIONS:
            return True
        if isinstance(function, ast.Name) and function.id in PURE_BUILTINS | PURE_FUNCTIONS:
            return True
        root = self._chain(call)[0]
        return root is not None and (
            root in self.objects
            or root in self.images
            or root in self.display_functions
            or self._role_of(root, []) is not None
        )

    def _loop(self, node: ast.For | ast.AsyncFor, keep_all: bool) -> Record:
        """A loop over axes or figures draws; it stays (with its figure) if it computes too."""
        kind, group = self.classify_expression(node.iter)
        iter_names = names_in(node.iter)
        if kind != DRAW and not (iter_names & set(self.objects)):
            self._forget(target_names(node.target))
            self.walk_body(node.body, keep_all)
            self.walk_body(node.orelse, keep_all)
            return Record(KEEP)
        if group is None:
            group = next(self.objects[n] for n in iter_names if n in self.objects)
        for name in target_names(node.target):
            if _derived_from_display(node, name, self):
                self.objects[name] = group
        before = set(self.records)
        self.walk_body(node.body, keep_all)
        self.walk_body(node.orelse, keep_all)
        if any(r.kind == KEEP or r.effects for k, r in self.records.items() if k not in before):
            self.groups.keep(group)  # the loop stays for its computation: so do its axes
        return Record(DRAW, group)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, keep_all: bool) -> Record:
        """A function whose every statement displays is a display function: calls to it go."""
        saved = self.current
        self.current = None
        self._forget([node.name])
        before = set(self.records)
        self.walk_body(node.body, keep_all)
        self.current = saved
        inner = [self.records[k] for k in self.records if k not in before]
        body_kinds = {r.kind for r in inner} | ({KEEP} if any(r.effects for r in inner) else set())
        docstring_only = all(
            isinstance(s, ast.Pass)
            or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            for s in node.body
        )
        if body_kinds and not docstring_only and body_kinds <= {SHOW, DRAW, STYLE, ECHO}:
            self.display_functions.add(node.name)
        else:
            self.display_functions.discard(node.name)
        return Record(KEEP)

    def _join(self, expression: ast.AST, group: int) -> None:
        """Figures a drawing call mentions belong together (``fig.colorbar(im, ax=ax)``)."""
        for name in names_in(expression):
            if name in self.objects:
                self.groups.union(group, self.objects[name])
            elif name in self.data_names:
                self.groups.union(group, self.data_names[name])

    def _assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> Record:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = tuple(n for t in targets for n in target_names(t))
        value = node.value
        # Assigning into a figure or a display module: ``ax.title.text = ...``, ``plt.rcParams[..]``
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                root, attrs, _ = self._chain(target)
                if root in self.objects:
                    if value is not None:
                        self._join(value, self.objects[root])
                    return Record(DRAW, self.objects[root])
                role = self._role_of(root, attrs)
                if role is not None and rules.BY_NAME[role.removeprefix("fn:")].settings:
                    return Record(STYLE)
        if value is None:
            return Record(KEEP)
        kind, group = self.classify_expression(value)
        if kind in {DRAW, SHOW} and isinstance(value, ast.Call):
            root, attrs, _ = self._chain(value)
            function = attrs[-1] if attrs else self.function_names.get(root or "")
            matplotlib = root in self.objects or (self._role_of(root, attrs) or "").removeprefix(
                "fn:"
            ) in {rules.PYPLOT.name, rules.MATPLOTLIB.name}
            group = group if group is not None else self.groups.new()
            self._join(value, group)
            if function in rules.PYPLOT.data_returning and matplotlib:
                self._forget(names)
                self.data_names.update(dict.fromkeys(names, group))
                return Record(DATA, group, names, effects=self._effects(value))
            for name in names:
                self.objects[name] = group
                self.images.discard(name)
            return Record(DRAW, group, names, effects=self._effects(value))
        if kind == STYLE:
            return Record(STYLE)
        self._forget(names)
        root = self._chain(value)[0]
        if root is not None and (
            root in self.images
            or (self.roles.get(root) or "").removeprefix("fn:") == rules.PIL_IMAGE.name
        ):
            self.images.update(names)
        return Record(KEEP)

    def _forget(self, names: Iterable[str]) -> None:
        for name in names:
            self.rebound.add(name)
            self.objects.pop(name, None)
            self.data_names.pop(name, None)
            self.images.discard(name)
            self.roles.pop(name, None)
            self.display_functions.discard(name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> Record:
        bound: list[str] = []
        display_only = True
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                module = alias.name if alias.asname else alias.name.split(".")[0]
                role = role_for_module(module)
                if role is None and not alias.asname and "." in alias.name:
                    role = role_for_module(alias.name.split(".")[0])
                self._forget([name])
                if role is None:
                    display_only = False
                else:
                    self.roles[name] = role
                bound.append(name)
        else:
            module = node.module or ""
            for alias in node.names:
                name = alias.asname or alias.name
                self._forget([name])
                submodule_role = role_for_module(f"{module}.{alias.name}")
                role = role_for_module(module)
                if submodule_role is not None and submodule_role != role:
                    self.roles[name] = submodule_role
                elif role is not None:
                    self.roles[name] = f"fn:{role}"
                    self.function_names[name] = alias.name
                else:
                    display_only = False
                bound.append(name)
        return Record(IMPORT if display_only else KEEP, bound=tuple(bound))


def _derived_from_display(loop: ast.For | ast.AsyncFor, name: str, analysis: Analysis) -> bool:
    """In ``for ax, img in zip(axes.flat, images)`` only ``ax`` is a figure part."""
    iterator, target = loop.iter, loop.target
    if (
        isinstance(iterator, ast.Call)
        and isinstance(iterator.func, ast.Name)
        and isinstance(target, (ast.Tuple, ast.List))
    ):
        if iterator.func.id == "zip" and len(iterator.args) == len(target.elts):
            for argument, element in zip(iterator.args, target.elts, strict=False):
                if name in target_names(element):
                    return bool(names_in(argument) & set(analysis.objects)) or (
                        analysis.classify_expression(argument)[0] == DRAW
                    )
        if iterator.func.id == "enumerate" and len(target.elts) == 2:
            return name in target_names(target.elts[1])
    return True
