"""Pass 1 of ``display.py``: classify every statement of a notebook in execution order,
tracking what names mean (display modules under any alias, figures, axes, widgets) and
which figure groups are kept (saved, or read by kept computation). Rules are data in
``display_rules.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import display_rules as rules
from .display_rules import (
    COMPUTE,
    DATA,
    DRAW,
    DRAW_CURRENT,
    DRAW_NEW,
    ECHO,
    FIRST,
    IMPORT,
    KEEP,
    PURE_BUILTINS,
    PURE_FUNCTIONS,
    SAVE,
    SHOW,
    STYLE,
    Library,
)
from .display_syntax import (
    bodies,
    chain_root,
    executed,
    names_in,
    only_displays,
    role_for_module,
    target_names,
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


class Groups:
    """Union-find over figure groups; a group is kept once any member is."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.kept: set[int] = set()

    def new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, group: int) -> int:
        while self.parent[group] != group:
            self.parent[group] = self.parent[self.parent[group]]
            group = self.parent[group]
        return group

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if rb in self.kept:
                self.kept.add(ra)
        return ra

    def keep(self, group: int) -> None:
        self.kept.add(self.find(group))

    def is_kept(self, group: int) -> bool:
        return self.find(group) in self.kept


class Analysis:
    """Pass 1: what every statement of the notebook is, in execution order."""

    def __init__(self) -> None:
        self.roles: dict[str, str] = {}  # name → module role, or "fn:<role>" for functions
        self.objects: dict[str, int] = {}  # name → figure group
        self.images: set[str] = set()
        self.display_functions: set[str] = set()
        self.groups = Groups()
        self.current: int | None = None
        self.records: dict[int, Record] = {}
        self.reads: set[str] = set()  # names read by computation
        self.function_names: dict[
            str, str
        ] = {}  # ``from seaborn import histplot as h``: h → histplot
        self.rebound: set[str] = set()  # names the notebook binds itself (``display = print``)
        self.display_decorators: set[int] = set()  # ``@interact``: ids of decorator nodes
        self.data_names: dict[str, int] = {}  # ``counts`` of ``counts, bins, _ = plt.hist(x)``

    # ------------------------------------------------------------- resolution
    def _chain(self, node: ast.AST) -> tuple[str | None, list[str], int]:
        """Root name, attribute names from the root outward, and how many calls it has."""
        attrs: list[str] = []
        calls = 0
        while True:
            if isinstance(node, ast.Call):
                calls += 1
                node = node.func
            elif isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Name):
                return node.id, attrs[::-1], calls
            else:
                return None, attrs[::-1], calls

    def _role_of(self, root: str | None, attrs: list[str]) -> str | None:
        """The library ``root`` names (``"fn:"`` + it for an imported function), if any."""
        if root is None:
            return None
        role = self.roles.get(root)
        if role is None and root == "display" and "display" not in self.rebound:
            return "fn:" + rules.IPYTHON_DISPLAY.name  # the notebook's built-in display()
        return role

    def classify_expression(self, node: ast.AST) -> tuple[str, int | None]:
        """(kind, group) of an expression evaluated for its effect or its value."""
        if not isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.Name)):
            return KEEP, None
        root, attrs, calls = self._chain(node)
        if root is None:
            return KEEP, None
        method = attrs[-1] if attrs else root
        if root in self.objects:
            group = self.objects[root]
            if set(attrs) & rules.SAVE_METHODS:
                return SAVE, group
            if method == "show" or not attrs:
                return SHOW, group
            return DRAW, group
        if root in self.images:
            return (SHOW, None) if method in rules.PIL_IMAGE.show and calls else (KEEP, None)
        role = self._role_of(root, attrs)
        if role is not None:
            return self._classify_library(role, root, attrs, calls, node)
        if root in self.display_functions and calls:
            return SHOW, None
        return self._classify_visualiser(attrs, calls)

    def _classify_visualiser(self, attrs: list[str], calls: int) -> tuple[str, int | None]:
        """Any object's own plotting methods: ``df.plot.bar()``, ``x.visualize()``..."""
        if not calls or not attrs:
            return KEEP, None
        drawing = set(attrs) & rules.VISUALISER_ATTRIBUTES or attrs[-1] in rules.VISUALISER_METHODS
        if not drawing:
            return KEEP, None
        if set(attrs) & rules.SAVE_METHODS:  # ``df.plot().get_figure().savefig(...)``
            return SAVE, self._current_group()
        if "style" in attrs:  # a pandas Styler: a rendered table of its own
            return DRAW, self.groups.new()
        return DRAW, self._current_group()

    def _classify_library(
        self, role: str, root: str, attrs: list[str], calls: int, node: ast.AST
    ) -> tuple[str, int | None]:
        """A use of a display library, by the library's table in ``display_rules``."""
        library = rules.BY_NAME[role.removeprefix("fn:")]
        names = [self._function_name(root), *attrs] if role.startswith("fn:") else list(attrs)
        if library is rules.MATPLOTLIB and names[:1] == ["pyplot"]:
            library, names = rules.PYPLOT, names[1:]
        if library is rules.MATPLOTLIB and names[:1] == ["use"]:
            return self._backend(node), None
        if not names:
            return (SHOW if library.bare == SHOW and not calls else KEEP), None
        function = names[0] if library.pick == FIRST else names[-1]
        if not calls:
            return self._bare_use(library, function, attrs)
        if set(names) & library.data:  # ``sns.load_dataset(...)``, ``px.data.iris()``
            return KEEP, None
        if function in library.show or (library.display_prefix and function.startswith("display")):
            return SHOW, None
        if function in library.save:
            return SAVE, self._current_group() if library.pick == FIRST else None
        if function in library.create:
            self.current = self.groups.new()
            return DRAW, self.current
        if function in library.close:
            group = self._current_group()
            self.current = None
            return DRAW, group
        if function in library.style or function.endswith(library.style_suffixes or ("\0",)):
            return STYLE, None
        if library.otherwise == COMPUTE:
            return KEEP, None
        if library.otherwise == DRAW_NEW:
            return DRAW, self.groups.new()
        return DRAW, self._current_group()

    def _bare_use(
        self, library: Library, function: str, attrs: list[str]
    ) -> tuple[str, int | None]:
        """A library name used without a call: ``plt.rcParams``, ``HTML``, ``px.colors``."""
        if library.bare == SHOW:
            return (SHOW if not attrs else KEEP), None
        if function in library.style:
            return STYLE, None
        if library.bare == DRAW_CURRENT:
            return DRAW, self._current_group()
        return library.bare, None

    @staticmethod
    def _backend(node: ast.AST) -> str:
        """``matplotlib.use('Agg')`` stays; a backend that opens windows goes."""
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            return KEEP if str(node.args[0].value).lower() in rules.SAFE_BACKENDS else SHOW
        return SHOW

    def _function_name(self, alias: str) -> str:
        """The real name of an imported function (``from seaborn import histplot as h``)."""
        return self.function_names.get(alias, alias)

    def _current_group(self) -> int:
        if self.current is None:
            self.current = self.groups.new()
        return self.current

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
            if keep_all and record.kind not in {IMPORT}:
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
        root = chain_root(call)
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
        root = chain_root(value)
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
