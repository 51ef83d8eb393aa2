"""Translate IPython syntax (magics, ``!cmd``, ``obj?``) into plain Python for a batch job.

Why translate rather than run the script under ``ipython``: the job then runs with plain
``python`` (no IPython start-up files, no history database written to a shared file
system by hundreds of jobs, no extra start-up time), and the script reads as ordinary
Python a student can learn from: ``!ls`` becomes ``subprocess.run(...)``.  Magics with no
plain-Python form (``%run``, ``%store``, unknown ones), and ``%timeit``, whose report is
IPython's own, still work: they go to IPython's own shell bound to the script's globals
(``_ipython()``), created only if such a magic is used.

IPython's own input transformer parses the special syntax, so continuation lines,
indentation and assignments (``files = !ls``) are understood exactly as IPython does; a
one-line cell (``ls``, ``cd results``, ``pip install rich``) goes through IPython's own
prefilter (automagics, aliases) too, with the names the notebook bound so far hiding magics
of the same name, as in IPython.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import re
import shlex
import sys
import types
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cache
from typing import Any

from . import magic_rules as rules
from ._source import SourceEditor, parsed, string_literal

#: helper names a translated cell may need in the script's prelude
SUBPROCESS, TIMER, IPYTHON, OS, SYS = "subprocess", "timer", "ipython", "os", "sys"


@dataclass(frozen=True)
class Translated:
    """A cell in plain Python, and the helpers it needs at the top of the script."""

    source: str
    needs: frozenset[str] = frozenset()


def translate_magics(source: str, bound: Collection[str] = ()) -> Translated:
    """The cell ``source`` with every IPython-only construct made plain Python.

    ``bound``: names the notebook defined in earlier cells (they hide automagics, as in
    IPython).  Raises ``SyntaxError`` when the cell is not valid even as IPython input.
    """
    needs: set[str] = set()
    return Translated(_translate(source, needs, bound), frozenset(needs))


def _translate(source: str, needs: set[str], bound: Collection[str] = ()) -> str:
    stripped = source.lstrip()
    if stripped.startswith("%%"):  # the only place IPython reads a cell magic
        return _cell_magic(stripped, needs)
    plain = parsed(source)
    # a one-line expression cell (``ls -la``, ``pwd``) IPython may read as an automagic
    if plain is not None and "get_ipython" not in source and not (
            len(plain.body) == 1 and isinstance(plain.body[0], ast.Expr)
            and plain.body[0].end_lineno == plain.body[0].lineno):
        return source
    text = transform_cell(source, bound)
    tree = ast.parse(text)
    editor = SourceEditor(text)
    # ast.walk reaches a node before what is in it: what a translated statement or call held
    # (its ``get_ipython``) is skipped
    inside: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            replacement = _line_statement(node.value, editor.indentation(node), needs)
            if replacement is not None:
                inside |= {id(n) for n in ast.walk(node)}
                editor.replace_lines(node.lineno, node.end_lineno or node.lineno, replacement)
        elif isinstance(node, ast.Call) and _ipython_call(node) == "getoutput" \
                and _string_args(node):  # ``files = !ls``
            inside |= {id(n) for n in ast.walk(node)}
            editor.replace_node(node, _captured_command(_string_args(node)[0], needs))
        elif isinstance(node, ast.Name) and node.id == "get_ipython":
            needs.add(IPYTHON)
            editor.replace_node(node, "_ipython")
    return editor.result()


def bound_names(tree: ast.AST) -> set[str]:
    """Names a cell defines: assignments, imports, functions, classes, loop targets."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _ipython_call(node: ast.AST) -> str | None:
    """``run_line_magic`` for ``get_ipython().run_line_magic(...)``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Call) and \
            isinstance(node.func.value.func, ast.Name) and node.func.value.func.id == "get_ipython":
        return node.func.attr
    return None


def _string_args(call: ast.Call) -> list[str]:
    values = [a.value for a in call.args
              if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return values if len(values) == len(call.args) else []


# ---------------------------------------------------------------------- line level
def _line_statement(call: ast.Call, indent: str, needs: set[str]) -> str | None:
    """Replacement lines for a magic used as a statement; None keeps the IPython call."""
    method, args = _ipython_call(call), _string_args(call)
    if method == "system" and args:
        return _system(args[0], indent, needs)
    if method == "run_line_magic" and len(args) == 2:
        return _line_magic(args[0], args[1], indent, needs)
    return None


def _line_magic(name: str, line: str, indent: str, needs: set[str]) -> str:
    """``%name line`` as plain Python lines: dropped with a reason, translated, an alias's
    shell command, or else IPython's own shell in the job."""
    shown = f"%{name} {line}".strip()
    if (reason := rules.why_dropped(name, line, shown)) is not None:
        return f"{indent}# {reason}\n"
    translate = _LINE_MAGICS.get(name)
    translated = translate(line, indent, shown, needs) if translate is not None else None
    if translated is not None:
        return translated
    # ``%ls``, ``cat FILE``: IPython's aliases run a shell command
    if (command := alias_command(name, line)) is not None:
        return _system(command, indent, needs)
    needs.add(IPYTHON)
    return f"{indent}_ipython().run_line_magic({name!r}, {line!r})\n"


def _time(line: str, indent: str, shown: str, needs: set[str]) -> str:
    needs.add(TIMER)
    inner = _translate(line + "\n", needs).rstrip("\n")
    inner_lines = "".join(f"{indent}{text}\n" for text in inner.splitlines())
    return (f"{indent}_started = _perf_counter()  # {shown}\n{inner_lines}"
            f'{indent}print(f"Wall time: {{_perf_counter() - _started:.3f}} s")\n')


def _cd(line: str, indent: str, shown: str, needs: set[str]) -> str | None:
    if not line or line.strip() == "-":
        return None  # ``%cd`` alone or ``%cd -`` use IPython's directory history
    needs.add(OS)
    return f"{indent}os.chdir(os.path.expanduser({_command_literal(line.strip())}))\n"


def _system(command: str, indent: str, needs: set[str]) -> str:
    if rules.INSTALLERS.match(command):
        return f"{indent}# !{command}: dropped, {rules.INSTALL_WHY}\n"
    needs.add(SUBPROCESS)
    return f'{indent}subprocess.run(["bash", "-c", {_command_literal(command)}], check=False)\n'


def _captured_command(command: str, needs: set[str]) -> str:
    needs.add(SUBPROCESS)
    return (f'subprocess.run(["bash", "-c", {_command_literal(command)}], capture_output=True, '
            "text=True, check=False).stdout.splitlines()")


def _command_literal(command: str) -> str:
    """The command as an f-string when IPython would expand ``{expr}`` in it, else a string.

    ``$NAME`` is left to the shell (environment variables), which is what IPython does for
    names that are not Python variables.
    """
    if "{" in command:
        candidate = "f" + repr(command)
        try:
            tree = ast.parse(candidate, mode="eval")
        except SyntaxError:
            return repr(command)
        values = [n for n in ast.walk(tree) if isinstance(n, ast.FormattedValue)]
        if values and not any(isinstance(v.value, ast.Tuple) for v in values):
            return candidate
    return repr(command)


def _env(line: str, indent: str, shown: str, needs: set[str]) -> str:
    match = re.fullmatch(r"\s*(\w+)\s*(?:=\s*|\s+)(.+?)\s*", line)
    if not match:
        return f"{indent}# {shown}: dropped, it only shows the environment\n"
    needs.add(OS)
    return f"{indent}os.environ[{match.group(1)!r}] = {_command_literal(match.group(2))}\n"


#: ``%name line`` → plain Python lines (None: IPython's shell runs it)
_LINE_MAGICS: dict[str, Callable[[str, str, str, set[str]], str | None]] = {
    "time": _time, "cd": _cd, "env": _env, "set_env": _env,
    "system": lambda line, indent, _, needs: _system(line, indent, needs) if line else None,
    "sx": lambda line, indent, _, needs: (indent + _captured_command(line, needs) + "\n"
                                          if line else None)}


# ---------------------------------------------------------------------- cell level
def _cell_magic(text: str, needs: set[str]) -> str:
    first, _, body = text.partition("\n")
    name, _, line = first[2:].strip().partition(" ")
    line = line.strip()
    shown = f"%%{name} {line}".strip()
    if name == "time":
        return _time(body.rstrip(), "", shown, needs)
    if name == "capture" and all(w.startswith("-") for w in line.split()):
        return f"# {shown}: dropped, the output goes to the job's log\n" + _translate(body, needs)
    if name == "sbatch":
        return "# %%sbatch: this cell already runs inside the batch job\n" + _translate(body, needs)
    if name in rules.DISPLAY_CELL_MAGICS:
        return f"# {shown}: cell dropped, it only displays in the notebook\n"
    if name in {"writefile", "file"}:  # ``%%file`` is IPython's old name for it
        return _writefile(line, body, shown, needs)
    if name in rules.SCRIPT_CELL_MAGICS or name == "script":
        program = _script_program(name, line)
        if program is not None:
            needs.add(SUBPROCESS)
            if program == ["python"]:
                needs.add(SYS)
            argv = "[sys.executable]" if program == ["python"] else repr(program)
            return (f"# {shown}\nsubprocess.run({argv}, input={string_literal(body)}, "
                    "text=True, check=True)\n")
    needs.add(IPYTHON)
    return f"_ipython().run_cell_magic({name!r}, {line!r}, {string_literal(body)})\n"


def _script_program(name: str, line: str) -> list[str] | None:
    if name == "script":
        words = shlex.split(line)  # --bg, --out and friends: IPython's shell handles them
        return words if words and not any(w.startswith("-") for w in words) else None
    if line.strip() and line.strip() != "--no-raise-error":
        return None
    return ["python"] if name.startswith("python") or name == "pypy" else [name]


def _writefile(line: str, body: str, shown: str, needs: set[str]) -> str:
    words = shlex.split(line)
    append = any(w in {"-a", "--append"} for w in words)
    paths = [w for w in words if not w.startswith("-")]
    if len(paths) != 1:
        needs.add(IPYTHON)
        return f"_ipython().run_cell_magic('writefile', {line!r}, {string_literal(body)})\n"
    return (f"# {shown}\nwith open({paths[0]!r}, {'a' if append else 'w'!r}) as _file:\n"
            f"    _file.write({string_literal(body)})\n")


# ---------------------------------------------------------------------- IPython's own reading
# A private shell: not IPython's singleton, its own ``user_module`` (never ``__main__``), and
# what its constructor sets for interactive sessions (``sys.ps1``, ``builtins.display``, the
# exit hook) is put back, so converting inside a kernel or a Jupyter server changes nothing.
@cache
def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.shellapp import InteractiveShellApp
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    touched = ((vars(builtins), ("__IPYTHON__", "display")), (vars(sys), ("ps1", "ps2")))
    saved = [(space, key, key in space, space.get(key)) for space, keys in touched for key in keys]
    shell = InteractiveShell(config=config,
                             user_module=types.ModuleType("_hpc_magics_prefilter_namespace"))
    atexit.unregister(shell.atexit_operations)
    # the extensions a kernel loads (storemagic: %store), as the script's shell does
    for extension in InteractiveShellApp.default_extensions.default() or ():
        shell.run_line_magic("load_ext", extension)
    for space, key, present, value in saved:
        if present:
            space[key] = value
        else:
            space.pop(key, None)
    return shell


def transform_cell(source: str, bound: Collection[str] = ()) -> str:
    """A cell as IPython runs it: its input transformer, and for a one-line cell its prefilter
    (automagics and aliases: ``cd data`` → a ``%cd`` magic call); ``bound`` hides magics of
    the same name, as in IPython (``ls = [1]`` then ``ls`` shows the list).
    """
    shell = _shell()
    namespace = shell.user_ns
    added = [name for name in bound if name not in namespace]
    namespace.update(dict.fromkeys(added))
    try:
        return str(shell.transform_cell(source))
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
