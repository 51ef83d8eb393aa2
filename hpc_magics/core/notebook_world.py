"""The world of the kernel a notebook names (a whole-notebook job, ``hpc-magics convert``),
not the world of the process that submits: that process's modules are its own, and loading
them in the job would give the notebook's kernel a world it never had.

The job sets up the kernelspec's interpreter (its venv or conda environment first on
``PATH``) and the modules the notebook's metadata (``hpc_magics.environment``) or else the
kernelspec's ``env`` names; nothing for a kernelspec whose ``argv`` sets up its own world.
Only the site's module system and an image or uenv this process runs in come from here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import InvalidRequest
from .kernel_world import AUTO, SETTINGS, KernelWorld, WorldParts, parts, read

# what the kernel shares with this process: the site's module system, the image or uenv
FROM_HERE = ("LMOD_PKG", "MODULESHOME", "MODULEPATH", "APPTAINER_CONTAINER",
             "SINGULARITY_CONTAINER", "UENV_MOUNT_LIST", "UENV_VIEW")


@dataclass(frozen=True)
class NotebookKernel:
    name: str
    argv: tuple[str, ...]
    world: KernelWorld
    settings: Mapping[str, Any]  # the notebook's hpc_magics.environment

    @property
    def starts_itself(self) -> bool:
        """Its argv is a wrapper (a shell, a module command), not a Python interpreter."""
        return not Path(self.argv[0] if self.argv else "").name.startswith("python")


def kernel_of(name: str, argv: Sequence[str], env: Mapping[str, str],
              here: Mapping[str, str], metadata: Mapping[str, Any]) -> NotebookKernel:
    """The kernel ``name`` (its kernelspec's ``argv`` and ``env``) in the notebook whose
    ``metadata`` this is; ``here``: this process's environment (``FROM_HERE`` only)."""
    environ = {k: here[k] for k in FROM_HERE if k in here} | dict(env)
    python = argv[0] if argv else ""
    world = read(environ, python)
    if not world.venv and not world.conda and python.startswith("/"):
        prefix = Path(python).parent.parent
        if (prefix / "pyvenv.cfg").is_file():
            world = replace(world, venv=str(prefix))
        elif (prefix / "conda-meta").is_dir():
            world = replace(world, conda=str(prefix))
    return NotebookKernel(name, tuple(argv), world, notebook_settings(metadata))


def notebook_settings(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``hpc_magics.environment`` of the notebook's metadata, checked."""
    ours = metadata.get("hpc_magics")
    table = ours.get("environment", {}) if isinstance(ours, Mapping) else {}
    allowed = [name for name in SETTINGS if name != "interpreter"]  # the kernelspec's argv
    if not isinstance(table, Mapping) or set(table) - set(allowed):
        raise InvalidRequest(
            f"notebook metadata hpc_magics.environment {table!r}: a mapping of "
            f"{', '.join(allowed)} (as a profile's [environment] table; the interpreter is "
            "the kernel's): fix it in Edit > Notebook Metadata")
    return dict(table)


def notebook_parts(kernel: NotebookKernel, here: KernelWorld, profile_settings: Mapping[str, Any],
                   clean: bool, driver: str,
                   role: str = "starts that kernel and runs the notebook on it") -> WorldParts:
    """The job script's lines for the notebook's kernel; ``driver`` runs the notebook (the
    package's Python, which starts the kernel from its kernelspec), as ``role`` says."""
    # the kernelspec's argv is the kernel's interpreter: an interpreter setting is the driver's
    settings = {**profile_settings, **kernel.settings, "interpreter": AUTO}
    world = kernel.world
    if kernel.starts_itself and "modules" not in kernel.settings:
        world = replace(world, modules=(), module_files=(), venv=None, conda=None)
    made = parts(replace(world, python=driver), settings, clean, notebook=True)
    said = [f"kernel {kernel.name!r}: {shlex.join(kernel.argv)}", f"interpreter: {driver} "
            f"({role})"]
    if kernel.starts_itself:
        said.append("the kernel's argv sets up its own world (as it does here)")
    said += made.said[1:]
    carried = set(world.modules) if made.lines else set()
    left = [m for m in here.modules if m not in carried]
    if left:
        said.append(f"modules loaded here ({' '.join(left)}) are not loaded for the notebook's "
                    "kernel" + ("" if clean else ", though sbatch's --export=ALL passes their "
                                "environment on") + ": name those it needs in the notebook's "
                    "metadata hpc_magics.environment.modules")
    notes = tuple(f"# the notebook's world: {line}" for line in said)
    return replace(made, lines=(*notes, *made.lines), said=tuple(said))
