"""hpc_magics: run notebook cells as Slurm jobs and keep your server's allocation in view.

``%load_ext hpc_magics`` registers the magics. Importing this package is cheap: the
widget stack, nbconvert, tornado and submitit load on first use.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``hpc_magics.__version__``: the installed package's, from its metadata (the git tag
    it was built from: docs/releasing.md), read on first use, not at import.

    ``hpc_magics.resumed``: in a %%sbatch --checkpoint job, True when the cell runs again
    after a requeue, with its checkpointed variables restored (set on the node by
    ``node/task.py``; always False in the notebook)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("hpc_magics")
        except PackageNotFoundError:  # imported from a tree that is not installed
            raise AttributeError("hpc_magics.__version__: the package is not installed") from None
    if name == "resumed":
        from .node import task

        return task.resumed
    raise AttributeError(f"module 'hpc_magics' has no attribute {name!r}")


def checkpoint() -> Any:
    """In a %%sbatch --checkpoint job: save the checkpointed variables now (rank 0)."""
    from .node.task import checkpoint as save

    return save()


def load_ipython_extension(ipython: Any) -> None:
    from .magics import register

    register(ipython)


def job(job_id: str | int | None = None) -> Any:
    """The handle of a job of this notebook (the last one when no id is given): its id as
    ``%hpc_jobs`` lists it, a string or a number.

    ``job().state``, ``.wait()``, ``.fetch()``, ``.cancel()``, ``.log()``, ``.rerun(mem="12G",
    time="2h")``; it works after a kernel restart too, from the job folder.
    """
    from IPython import get_ipython

    # bool is an int, but True is nobody's job id
    if isinstance(job_id, int) and not isinstance(job_id, bool):
        job_id = str(job_id)
    elif job_id is not None and not isinstance(job_id, str):
        raise TypeError(f"job id {job_id!r} ({type(job_id).__name__}): give it as 12345 or "
                        "'12345' (an array task as '12345_7'), or nothing for the last job")
    shell = get_ipython()
    magics = shell.magics_manager.registry.get("HpcMagicsKernel") if shell is not None else None
    if magics is None:
        raise RuntimeError("load the extension first: %load_ext hpc_magics")
    return magics.handle_for(job_id)


def unload_ipython_extension(ipython: Any) -> None:
    """Nothing to tear down: magics hold no resources beyond the session's defaults."""


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """jupyter_server finds the extension here; the module loads tornado only when called."""
    return [{"module": "hpc_magics.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt labextension (built from labextension/ into hpc_magics/labextension)."""
    return [{"src": "labextension", "dest": "hpc-magics-labextension"}]
