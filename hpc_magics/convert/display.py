"""Remove display code from a notebook's cells, keep its computation.

Decided on the syntax tree of the whole notebook, in two passes:

1. *Classify* every statement in execution order while tracking what names mean: modules
   imported under any alias (``plt``, ``sns``, ``px``, ``alt``, ``IPython.display``,
   ``ipywidgets``), names bound to figures, axes, charts and widgets (``fig, ax =
   plt.subplots()``), and pyplot's current figure.  Figures form *groups*: a figure, its axes
   and artists.  A group is **kept** when its figure is saved (``savefig``, ``write_image``),
   or read by kept computation (``writer.add_figure("loss", fig)``, ``len(ax.lines)``).
2. *Decide*: show statements (``plt.show()``, ``display(df)``, ``fig.show()``, ``interact``,
   a figure or a bare value as a cell's last expression) always go; drawing statements go
   unless their group is kept; assignments from plotting calls that return data
   (``counts, bins, _ = plt.hist(x)``) stay when the data is read by kept code.  A block left
   empty gets ``pass``; a loop or ``if`` whose whole body went, goes; imports of display
   libraries nothing kept uses go (so the job does not need seaborn or plotly installed).

Removed statements are commented out in place (``# [display] plt.show()``) so the script
still reads like the notebook, or deleted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import display_rules as rules
from ._source import SourceEditor, comment_block
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
    PURE_METHODS,
    SAVE,
    SHOW,
    STYLE,
    Library,
)


@dataclass
class _Record:
    kind: str
    group: int | None = None
    targets: tuple[str, ...] = ()
    bound: tuple[str, ...] = ()  # names an import binds
    effects: tuple[ast.expr, ...] = ()  # parts of a display call that compute something


@dataclass
class _Cell:
    source: str
    tree: ast.Module | None
    keep_all: bool


@dataclass
class StripResult:
    """The cells' new sources, and for each cell what was removed (for reports and tests)."""

    sources: list[str]
    removed: list[list[str]] = field(default_factory=list)


class _Groups:
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


class _Analysis:
    """Pass 1: what every statement of the notebook is, in execution order."""

    def __init__(self) -> None:
        self.roles: dict[str, str] = {}  # name → module role, or "fn:<role>" for functions
        self.objects: dict[str, int] = {}  # name → figure group
        self.images: set[str] = set()
        self.display_functions: set[str] = set()
        self.groups = _Groups()
        self.current: int | None = None
        self.records: dict[int, _Record] = {}
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
                record = _Record(KEEP)
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

    def statement(self, node: ast.stmt, keep_all: bool, last: bool) -> _Record:
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
            return _Record(STYLE if all(k in {STYLE, DRAW} for k in kinds) else KEEP)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._function(node, keep_all)
        for body in _bodies(node):  # if, while, try, class, match: their bodies decide
            self.walk_body(body, keep_all)
        return _Record(KEEP)

    def _expression(self, node: ast.Expr, last: bool) -> _Record:
        kind, group = self.classify_expression(node.value)
        if kind == KEEP and last and _only_displays(node.value):
            return _Record(ECHO)
        if kind == SAVE:
            self._read([node.value])  # ``pio.write_image(fig, ...)`` keeps ``fig``
            if group is not None:
                self.groups.keep(group)
        if kind == DRAW and group is not None:
            self._join(node.value, group)
        effects = self._effects(node.value) if kind in {SHOW, DRAW} else ()
        return _Record(kind, group, effects=effects)

    def _effects(self, node: ast.expr) -> tuple[ast.expr, ...]:
        """Arguments of a display call that compute something: ``display(next(it))``."""
        found: list[ast.expr] = []
        for call in (n for n in _executed(node) if isinstance(n, ast.Call)):
            for argument in [*call.args, *(k.value for k in call.keywords)]:
                value = argument.value if isinstance(argument, ast.Starred) else argument
                if not self._computes_nothing(value):
                    found.append(value)
        # an argument nested in another one that is kept anyway: keep the outer one only
        return tuple(a for a in found if not any(a is not b and a in _executed(b) for b in found))

    def _computes_nothing(self, node: ast.AST) -> bool:
        for child in _executed(node):
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
        root = _chain_root(call)
        return root is not None and (
            root in self.objects
            or root in self.images
            or root in self.display_functions
            or self._role_of(root, []) is not None
        )

    def _loop(self, node: ast.For | ast.AsyncFor, keep_all: bool) -> _Record:
        """A loop over axes or figures draws; it stays (with its figure) if it computes too."""
        kind, group = self.classify_expression(node.iter)
        iter_names = _names(node.iter)
        if kind != DRAW and not (iter_names & set(self.objects)):
            self._forget(_target_names(node.target))
            self.walk_body(node.body, keep_all)
            self.walk_body(node.orelse, keep_all)
            return _Record(KEEP)
        if group is None:
            group = next(self.objects[n] for n in iter_names if n in self.objects)
        for name in _target_names(node.target):
            if _derived_from_display(node, name, self):
                self.objects[name] = group
        before = set(self.records)
        self.walk_body(node.body, keep_all)
        self.walk_body(node.orelse, keep_all)
        if any(r.kind == KEEP or r.effects for k, r in self.records.items() if k not in before):
            self.groups.keep(group)  # the loop stays for its computation: so do its axes
        return _Record(DRAW, group)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, keep_all: bool) -> _Record:
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
        return _Record(KEEP)

    def _join(self, expression: ast.AST, group: int) -> None:
        """Figures a drawing call mentions belong together (``fig.colorbar(im, ax=ax)``)."""
        for name in _names(expression):
            if name in self.objects:
                self.groups.union(group, self.objects[name])
            elif name in self.data_names:
                self.groups.union(group, self.data_names[name])

    def _assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> _Record:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = tuple(n for t in targets for n in _target_names(t))
        value = node.value
        # Assigning into a figure or a display module: ``ax.title.text = ...``, ``plt.rcParams[..]``
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                root, attrs, _ = self._chain(target)
                if root in self.objects:
                    if value is not None:
                        self._join(value, self.objects[root])
                    return _Record(DRAW, self.objects[root])
                role = self._role_of(root, attrs)
                if role is not None and rules.BY_NAME[role.removeprefix("fn:")].settings:
                    return _Record(STYLE)
        if value is None:
            return _Record(KEEP)
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
                return _Record(DATA, group, names, effects=self._effects(value))
            for name in names:
                self.objects[name] = group
                self.images.discard(name)
            return _Record(DRAW, group, names, effects=self._effects(value))
        if kind == STYLE:
            return _Record(STYLE)
        self._forget(names)
        root = _chain_root(value)
        if root is not None and (
            root in self.images
            or (self.roles.get(root) or "").removeprefix("fn:") == rules.PIL_IMAGE.name
        ):
            self.images.update(names)
        return _Record(KEEP)

    def _forget(self, names: Iterable[str]) -> None:
        for name in names:
            self.rebound.add(name)
            self.objects.pop(name, None)
            self.data_names.pop(name, None)
            self.images.discard(name)
            self.roles.pop(name, None)
            self.display_functions.discard(name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> _Record:
        bound: list[str] = []
        display_only = True
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                module = alias.name if alias.asname else alias.name.split(".")[0]
                role = _role_for_module(module)
                if role is None and not alias.asname and "." in alias.name:
                    role = _role_for_module(alias.name.split(".")[0])
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
                submodule_role = _role_for_module(f"{module}.{alias.name}")
                role = _role_for_module(module)
                if submodule_role is not None and submodule_role != role:
                    self.roles[name] = submodule_role
                elif role is not None:
                    self.roles[name] = f"fn:{role}"
                    self.function_names[name] = alias.name
                else:
                    display_only = False
                bound.append(name)
        return _Record(IMPORT if display_only else KEEP, bound=tuple(bound))


def _role_for_module(module: str) -> str | None:
    """The library a module belongs to (its most specific table), by name."""
    best: tuple[str, str] | None = None
    for library in rules.LIBRARIES:
        for prefix in library.modules:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[0])
            ):
                best = (prefix, library.name)
    return best[1] if best else None


def _chain_root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _executed(node: ast.AST) -> list[ast.AST]:
    """``node`` and the nodes inside it that run when it is evaluated (not lambda bodies)."""
    found: list[ast.AST] = []
    pending = [node]
    while pending:
        current = pending.pop()
        found.append(current)
        if not isinstance(current, ast.Lambda):
            pending.extend(ast.iter_child_nodes(current))
    return found


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _derived_from_display(loop: ast.For | ast.AsyncFor, name: str, analysis: _Analysis) -> bool:
    """In ``for ax, img in zip(axes.flat, images)`` only ``ax`` is a figure part."""
    iterator, target = loop.iter, loop.target
    if (
        isinstance(iterator, ast.Call)
        and isinstance(iterator.func, ast.Name)
        and isinstance(target, (ast.Tuple, ast.List))
    ):
        if iterator.func.id == "zip" and len(iterator.args) == len(target.elts):
            for argument, element in zip(iterator.args, target.elts, strict=False):
                if name in _target_names(element):
                    return bool(_names(argument) & set(analysis.objects)) or (
                        analysis.classify_expression(argument)[0] == DRAW
                    )
        if iterator.func.id == "enumerate" and len(target.elts) == 2:
            return name in _target_names(target.elts[1])
    return True


def _only_displays(node: ast.AST) -> bool:
    """A value a cell ended with only to show it: removing it changes nothing computed.

    A bare name, attribute or literal, or a chain of known-pure inspection methods on one
    (``df.describe().round(2)``, ``len(x)``).  A subscript may call ``__missing__`` and any
    other call may change state (``queue.get()``, ``next(it)``, ``df.dropna(inplace=True)``):
    those stay, as statements.
    """
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _only_displays(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_only_displays(e) for e in node.elts)
    if isinstance(node, ast.Call):
        if any(k.arg == "inplace" for k in node.keywords):
            return False
        inert = all(_inert(a) for a in node.args) and all(_inert(k.value) for k in node.keywords)
        if isinstance(node.func, ast.Attribute) and node.func.attr in PURE_METHODS:
            return inert and _only_displays(node.func.value)
        if isinstance(node.func, ast.Name) and node.func.id in PURE_BUILTINS:
            return inert
    return False


def _inert(node: ast.AST) -> bool:
    """An argument whose evaluation runs no code: a literal, a name, an attribute."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _inert(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_inert(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _inert(node.operand)
    return False


# ---------------------------------------------------------------------- pass 2
_MARKERS = {
    SHOW: "[display]",
    DRAW: "[display]",
    STYLE: "[display]",
    ECHO: "[output]",
    DATA: "[display]",
    IMPORT: "[display import]",
}


class _Decider:
    def __init__(self, analysis: _Analysis, comment_removed: bool) -> None:
        self.analysis = analysis
        self.comment_removed = comment_removed
        self.any_kept = bool(analysis.groups.kept)
        self.kept_reads: set[str] = set()

    def dropped(self, statement: ast.stmt) -> bool:
        """The statement goes entirely (display only, nothing in it computes)."""
        return self.goes(statement) and not self._effects(statement)

    def _effects(self, statement: ast.stmt) -> tuple[ast.expr, ...]:
        record = self.analysis.records.get(id(statement))
        return record.effects if record is not None else ()

    def goes(self, statement: ast.stmt) -> bool:
        """The statement is display; it may still hold computation (``_effects``)."""
        record = self.analysis.records.get(id(statement))
        if record is None:
            return False
        groups = self.analysis.groups
        if record.kind in {SHOW, ECHO}:
            return True
        if record.kind == DRAW:
            if isinstance(statement, (ast.For, ast.AsyncFor)):
                return (
                    self._all_dropped(statement.body)
                    and self._all_dropped(statement.orelse)
                    and self._header_computes_nothing(statement)
                )
            return record.group is None or not groups.is_kept(record.group)
        if record.kind == DATA:
            kept = record.group is not None and groups.is_kept(record.group)
            return not kept and not (set(record.targets) & self.analysis.reads)
        if record.kind == STYLE:
            if isinstance(statement, (ast.With, ast.AsyncWith)):  # its body decides
                return self._all_dropped(statement.body)
            return not self.any_kept
        if record.kind == IMPORT:
            return not (set(record.bound) & self.kept_reads)
        if isinstance(
            statement, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)
        ):
            return (
                self._all_dropped(statement.body)
                and self._all_dropped(getattr(statement, "orelse", []))
                and self._header_computes_nothing(statement)
            )
        return False

    def _header_computes_nothing(self, statement: ast.stmt) -> bool:
        """A block whose body went goes too, unless its own part computes: a loop's
        iterator or condition that calls something, a loop variable read later."""
        if isinstance(statement, ast.While):
            return False  # its condition runs again and again: it stays
        parts = self.analysis._own_expressions(statement)
        if not all(self.analysis._computes_nothing(part) for part in parts):
            return False
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return not (set(_target_names(statement.target)) & self.analysis.reads)
        return True

    def _all_dropped(self, body: Sequence[ast.stmt]) -> bool:
        return all(self.dropped(s) for s in body)

    def collect_kept_reads(self, trees: Iterable[ast.Module]) -> None:
        for tree in trees:
            self._collect(tree.body)

    def _collect(self, body: Sequence[ast.stmt]) -> None:
        for statement in body:
            record = self.analysis.records.get(id(statement))
            if record is not None and record.kind == IMPORT:
                continue
            if self.dropped(statement):
                continue
            parts = self._effects(statement) if self.goes(statement) else ()
            for part in parts or self.analysis._own_expressions(statement):
                self.kept_reads |= _names(part)
                self.kept_reads |= {n.split(".")[0] for n in _attribute_roots(part)}
            for child in _bodies(statement):
                self._collect(child)

    def edit(self, editor: SourceEditor, body: Sequence[ast.stmt], removed: list[str]) -> None:
        decisions = [self.dropped(s) for s in body]
        for index, (statement, gone) in enumerate(zip(body, decisions, strict=False)):
            if gone:
                record = self.analysis.records[id(statement)]
                marker = _MARKERS.get(record.kind, "[display]") if self.comment_removed else None
                needs_pass = index == 0 and all(decisions) and not _is_module_body(body)
                editor.remove_statement(statement, marker, pass_if_empty=needs_pass)
                removed.append(ast.get_source_segment(editor.text, statement) or "")
                continue
            if self._effects(statement) and self.goes(statement):
                self._keep_effects(editor, statement, removed)
                continue
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for decorator in statement.decorator_list:
                    if id(decorator) in self.analysis.display_decorators:
                        _remove_decorator(editor, decorator, self.comment_removed)
                        removed.append("@" + (ast.get_source_segment(editor.text, decorator) or ""))
            for child in _bodies(statement):
                self.edit(editor, child, removed)

    def _keep_effects(self, editor: SourceEditor, statement: ast.stmt, removed: list[str]) -> None:
        """``display(next(it))`` → ``next(it)``: the display goes, what it computed stays."""
        if not editor.alone_on_lines(statement):
            return  # shares its line with other code: left as written
        source = ast.get_source_segment(editor.text, statement) or ""
        indent = editor.indentation(statement)
        parts = [ast.get_source_segment(editor.text, e) or "" for e in self._effects(statement)]
        if any("\n" in p for p in parts):
            return  # a multi-line argument: left as written rather than re-indented
        text = comment_block(source, indent, "[display]") if self.comment_removed else ""
        text += "".join(f"{indent}{part}\n" for part in parts)
        editor.replace_lines(statement.lineno, statement.end_lineno or statement.lineno, text)
        removed.append(source)


def _is_module_body(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and body[0].col_offset == 0


def _remove_decorator(editor: SourceEditor, decorator: ast.expr, comment: bool) -> None:
    line = editor.line_text(decorator.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    text = f"{indent}# [display] {line.lstrip()}" if comment else ""
    if text and not text.endswith("\n"):
        text += "\n"
    editor.replace_lines(decorator.lineno, decorator.end_lineno or decorator.lineno, text)


def _bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    bodies = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            bodies.append(value)
    for handler in getattr(statement, "handlers", []):
        bodies.append(handler.body)
    for case in getattr(statement, "cases", []):
        bodies.append(case.body)
    return bodies


def _attribute_roots(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def strip_display(
    cells: Sequence[tuple[str, bool]], *, comment_removed: bool = True
) -> StripResult:
    """Strip display code from code cells given as ``(source, keep_all)`` in notebook order.

    ``keep_all`` (the ``hpc-keep`` tag) keeps a cell as it is; its reads still keep the
    figures it uses.  Sources that do not parse are returned unchanged.
    """
    analysis = _Analysis()
    parsed: list[_Cell] = []
    for source, keep_all in cells:
        try:
            tree: ast.Module | None = ast.parse(source)
        except SyntaxError:
            tree = None
        parsed.append(_Cell(source, tree, keep_all))
        if tree is not None:
            analysis.walk_cell(tree, keep_all)
    decider = _Decider(analysis, comment_removed)
    decider.collect_kept_reads(c.tree for c in parsed if c.tree is not None)
    result = StripResult([])
    for cell in parsed:
        removed: list[str] = []
        if cell.tree is None or cell.keep_all:
            result.sources.append(cell.source)
        else:
            editor = SourceEditor(cell.source)
            decider.edit(editor, cell.tree.body, removed)
            result.sources.append(editor.result())
        result.removed.append(removed)
    return result
