"""The kernel's software world carried into the job script: interpreter, venv or conda
environment, loaded modules, a CSCS uenv, an Apptainer/Singularity image.

Under sbatch's default ``--export=ALL`` the interpreter's path is enough; a job that starts
clean (``--export=NONE``, ``SBATCH_EXPORT=NONE``) loads the modules again and puts the venv
first on ``PATH``. A profile's ``[environment]`` table sets each of ``interpreter``,
``modules``, ``uenv``, ``container`` to ``"auto"`` (the default), ``"off"`` or a value.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Folders a login host has for itself: a compute node does not see them.
LOGIN_ONLY = ("/tmp", "/var/tmp", "/dev/shm")
SETTINGS = ("interpreter", "modules", "uenv", "container")
AUTO, OFF = "auto", "off"


@dataclass(frozen=True)
class KernelWorld:
    python: str  # sys.executable of the kernel
    venv: str | None = None  # VIRTUAL_ENV
    conda: str | None = None  # CONDA_PREFIX
    modules: tuple[str, ...] = ()  # LOADEDMODULES
    module_files: tuple[str, ...] = ()  # _LMFILES_
    module_init: str | None = None  # the shell file that defines `module` here
    modulepath: str | None = None
    uenv: str | None = None  # UENV_MOUNT_LIST: file:mount pairs, itself a --uenv value
    uenv_view: str | None = None  # UENV_VIEW
    image: str | None = None  # APPTAINER_CONTAINER / SINGULARITY_CONTAINER
    container_command: str = "apptainer"


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(item for item in (text or "").split(":") if item)


def read(environ: Mapping[str, str], executable: str) -> KernelWorld:
    """The kernel's world, from its environment and ``sys.executable``."""
    home = environ.get("LMOD_PKG") or environ.get("MODULESHOME")
    image = environ.get("APPTAINER_CONTAINER") or environ.get("SINGULARITY_CONTAINER")
    return KernelWorld(
        python=executable, venv=environ.get("VIRTUAL_ENV") or None,
        conda=environ.get("CONDA_PREFIX") or None,
        modules=_split(environ.get("LOADEDMODULES")),
        module_files=_split(environ.get("_LMFILES_")),
        module_init=f"{home}/init/bash" if home else None,
        modulepath=environ.get("MODULEPATH") or None,
        uenv=environ.get("UENV_MOUNT_LIST") or None,
        uenv_view=environ.get("UENV_VIEW") or None, image=image or None,
        container_command="apptainer" if environ.get("APPTAINER_CONTAINER") else "singularity")


def setting(settings: Mapping[str, Any], name: str) -> Any:
    value = settings.get(name, AUTO)
    return OFF if value is False else value


def starts_clean(environ: Mapping[str, str], exports: Sequence[str]) -> bool:
    """The job's shell starts without the kernel's environment: ``--export`` (a line of the
    script, ``exports``) or else ``SBATCH_EXPORT`` says NONE (or names variables only)."""
    value = exports[-1] if exports else environ.get("SBATCH_EXPORT", "ALL")
    first = value.split(",")[0].strip().upper()
    return first != "ALL" and value.strip() != ""


@dataclass(frozen=True)
class WorldParts:
    directives: tuple[tuple[str, str], ...] = ()  # --uenv, --view
    lines: tuple[str, ...] = ()  # before the run line
    python: str = ""  # the interpreter command (shell text)
    said: tuple[str, ...] = ()  # for the dry run: what was carried, and how


def parts(world: KernelWorld, settings: Mapping[str, Any], clean: bool,
          notebook: bool = False) -> WorldParts:
    """The job script's share of the kernel's world. ``notebook``: the world of a notebook's
    kernel (core/notebook_world.py), set up in the job whatever the job's shell starts with."""
    interpreter = setting(settings, "interpreter")
    python = world.python if interpreter == AUTO else "python3" if interpreter == OFF \
        else str(interpreter)
    # a path is quoted; text with spaces is a command ("apptainer exec img.sif python")
    given = interpreter not in (AUTO, OFF)
    command = python if given and any(c.isspace() for c in python) else shlex.quote(python)
    directives: list[tuple[str, str]] = []
    lines: list[str] = []
    said = [f"interpreter: {python}" + (" (the kernel's)" if interpreter == AUTO else
                                        " (given)" if given else " (the job's PATH)")]
    uenv = setting(settings, "uenv")
    image_of_uenv = world.uenv if uenv == AUTO else None if uenv == OFF else str(uenv)
    if image_of_uenv:
        directives.append(("uenv", image_of_uenv))
        # uenv sets it as mount:uenv:view; sbatch's --view takes uenv:view (or view)
        view = ":".join(_split(world.uenv_view)[-2:]) if uenv == AUTO else None
        if view:
            directives.append(("view", view))
        said.append(f"uenv: {image_of_uenv} (--uenv" + (", --view" if view else "") + ")")
    container = setting(settings, "container")
    image = world.image if container == AUTO else None if container == OFF else str(container)
    if image:
        command = f"{world.container_command} exec {shlex.quote(image)} {command}"
        said.append(f"container: the cell runs in {image}")
    modules = setting(settings, "modules")
    wanted = list(world.modules) if modules == AUTO else [] if modules == OFF else \
        (list(modules) if isinstance(modules, list) else str(modules).split())
    if wanted and (clean or notebook or modules != AUTO):
        lines += ["# the notebook's kernel's modules" if notebook else
                  "# the kernel's modules, loaded again: this job's shell starts without them"
                  if modules == AUTO else "# the profile's modules"]
        if world.module_init:
            lines.append(f"command -v module >/dev/null 2>&1 || . {shlex.quote(world.module_init)}")
        if world.modulepath and modules == AUTO:
            lines.append(f"export MODULEPATH={shlex.quote(world.modulepath)}")
        lines.append(shlex.join(["module", "load", *wanted]))
    if wanted:
        how = "loaded in the job" if notebook else "loaded again in the job" \
            if clean or modules != AUTO else "their environment is exported"
        said.append(f"modules: {' '.join(wanted)} ({how})")
    prefix = world.venv or world.conda
    if prefix and interpreter == AUTO:
        kind = "venv" if world.venv else "conda environment"
        if clean or notebook:
            variable = "VIRTUAL_ENV" if world.venv else "CONDA_PREFIX"
            lines += [f"# the kernel's {kind}, first on PATH",
                      f"export {variable}={shlex.quote(prefix)}",
                      f'export PATH="${variable}/bin:$PATH"']
        said.append(f"{kind}: {prefix} (" + ("first on PATH in the job" if clean or notebook
                                             else "its environment is exported") + ")")
    if clean:
        # sbatch --export=NONE sets SLURM_EXPORT_ENV=NONE in the job: srun would start the
        # cell's step clean again, without what the lines above (and the script) set up
        lines.append("export SLURM_EXPORT_ENV=ALL")
    return WorldParts(tuple(directives), tuple(lines), command, tuple(said))


def login_only_root(path: str) -> str | None:
    """The login-only folder ``path`` lies under (``/tmp``, ...), or None (a bare command
    name, found on the node's PATH, is under none)."""
    if not path.startswith("/"):
        return None
    resolved = str(Path(path).resolve())
    return next((root for root in LOGIN_ONLY for candidate in (path, resolved)
                 if candidate == root or candidate.startswith(root + "/")), None)


def refusals(world: KernelWorld, settings: Mapping[str, Any],
             nodes_share_tmp: bool = False) -> list[str]:
    """One line each: what a compute node cannot reach of the kernel's world.
    ``nodes_share_tmp``: a one-host cluster, whose nodes see this host's /tmp."""
    found: list[str] = []
    interpreter = setting(settings, "interpreter")
    if interpreter == AUTO and not world.image and not nodes_share_tmp:
        for what, path in (("interpreter", world.python), ("venv", world.venv),
                           ("conda environment", world.conda)):
            root = login_only_root(path or "")
            if path and root:
                found.append(f"the kernel's {what} {path} is under {root}, which compute nodes "
                             "do not see: make it in your home or project folder, or set "
                             "HPC_MAGICS_PYTHON to an interpreter the nodes have")
                break
    if setting(settings, "modules") == AUTO:
        for name, path in zip(world.modules, world.module_files, strict=False):
            if not Path(path).is_file():
                found.append(f"module {name} is not available any more ({path} is gone): "
                             "module load it again in the kernel, or unload it")
            elif login_only_root(path) and not nodes_share_tmp:
                found.append(f"module {name} comes from {path}, which compute nodes do not "
                             "see: put the modulefile in your home or project folder")
    return found
