"""Which IPython magics a batch job drops, and why, and which cells other programs run:
the rules as data.

A batch job has no display, nobody to read help, and must not install packages while it
runs; these names and patterns say which magics (and shell commands) are left out of the
script as a comment with the reason. ``magics.py`` translates the rest.
"""

from __future__ import annotations

import re

INSTALLERS = re.compile(
    r"^\s*(?:\S*python[\d.]*\s+-m\s+|\{sys\.executable\}\s+-m\s+|sudo\s+)?"
    r"(?:pip3?|conda|mamba|micromamba|uv\s+pip)\s+(?:install|uninstall|remove|update)\b")
DISPLAY_CELL_MAGICS = {"html", "HTML", "javascript", "js", "markdown", "latex", "svg"}
SCRIPT_CELL_MAGICS = {"bash", "sh", "perl", "ruby", "python", "python2", "python3", "pypy"}
_INTERACTIVE_LINE_MAGICS = set("""
    unload_ext autoreload aimport who whos who_ls history hist lsmagic magic quickref
    page pprint xmode colors precision notebook qtconsole autosave automagic autocall
    doctest_mode pdb debug tb clear cls alias_magic rehashx recall rerun edit load save
    pastebin gui config sbatch_defaults bookmark dhist pwd pycat more less man
""".split())
#: extensions that only help an interactive session; any other (``Cython``, ``rpy2.ipython``,
#: ``line_profiler``) defines magics later cells use, so it is loaded in the job too
_INTERACTIVE_EXTENSIONS = {"autoreload", "tensorboard", "watermark", "jupyter_black", "nb_black"}
_HELP_LINE_MAGICS = {"pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource", "pfile"}
_HPC_LINE_MAGICS = re.compile(r"^(?:hpc_\w+|sbatch\w*|jobs?)$")

INSTALL_WHY = ("install packages before the job runs (setup lines of the .sbatch file or "
               "the environment), not inside it")


def why_dropped(name: str, line: str, shown: str) -> str | None:
    """The comment for a line magic that has no place in a batch job, else None."""
    if name == "matplotlib":
        return (f"{shown}: dropped, a batch job has no display "
                "(figures render off-screen with MPLBACKEND=Agg)")
    if INSTALLERS.match(f"{name} {line}"):  # ``%pip install``: the rule ``!pip install`` meets
        return f"{shown}: dropped, {INSTALL_WHY}"
    if name in _HELP_LINE_MAGICS:
        asked = {"pinfo": f"{line}?", "pinfo2": f"{line}??"}.get(name, shown)
        return f"{asked}: help look-up dropped, nobody reads it in a batch job"
    interactive_extension = name in {"load_ext", "reload_ext"} and \
        line.strip() in _INTERACTIVE_EXTENSIONS
    if interactive_extension or name in _INTERACTIVE_LINE_MAGICS or _HPC_LINE_MAGICS.match(name):
        return f"{shown}: dropped, it only matters in an interactive session"
    return None
