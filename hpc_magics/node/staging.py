"""Node-local data for a job: ``python -m hpc_magics.node.staging in|back|clean``.

The job script runs ``in`` and ``clean`` once on every node and ``back`` on the first. The
node-local root is ``$SLURM_TMPDIR``, else a private folder under the temporary folder,
named by user, job and node. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.scale import STAGE_TOKEN_VARIABLE, is_archive, staged_name
from ..core.users import login_name

OUT_DIR = "out"  # stage_out: what --stage-back copies back
PRIVATE_PREFIX = "hpc_magics-"


def local_root(environ: Mapping[str, str] | None = None) -> Path:
    """This node's folder for the job's staged data (the same for every task on it)."""
    env = os.environ if environ is None else environ
    if site := env.get("SLURM_TMPDIR"):
        return Path(site)
    import tempfile

    job = env.get("SLURM_JOB_ID", str(os.getpid()))
    node = env.get("SLURMD_NODENAME") or os.uname().nodename
    # the job script's random part (core/scale.py); without it (a job not started by our
    # script) the name is guessable, and private_dir's owner and symlink checks guard it
    token = env.get(STAGE_TOKEN_VARIABLE, "")
    suffix = f"-{token}" if re.fullmatch(r"[0-9a-f]{16,64}", token) else ""
    return Path(tempfile.gettempdir()) / f"{PRIVATE_PREFIX}{login_name()}-{job}-{node}{suffix}"


def private_dir(path: Path) -> Path:
    """``path`` created 0700, or an existing one that is a real folder of this user's:
    another user could make the fallback name in /tmp first, or point it elsewhere."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise RuntimeError(f"refusing to stage into {path}: it is not a folder (a symlink?); "
                           "remove it, or set SLURM_TMPDIR to a private folder")
    if info.st_uid != os.getuid():
        raise RuntimeError(f"refusing to stage into {path}: it belongs to uid {info.st_uid}, "
                           "not you; set SLURM_TMPDIR to a private folder")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)
    return path


def _extract(archive: Path, target: Path) -> None:
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(target)  # zipfile strips absolute paths and ".."
        return
    with tarfile.open(archive) as bundle:
        if hasattr(tarfile, "data_filter"):  # refuses links and paths leaving the target
            bundle.extractall(target, filter="data")
        else:  # pragma: no cover - Python without the extraction filters
            bundle.extractall(target)


def stage_in(paths: Sequence[str], root: Path | None = None) -> dict[str, str]:
    """Copy (or extract) each path under the node-local root; name → local path."""
    root = private_dir(root or local_root())
    staged: dict[str, str] = {}
    for source in map(Path, paths):
        target = root / staged_name(str(source))
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif is_archive(source.name):
            _extract(source, private_dir(target))
        else:
            shutil.copy2(source, target)
        staged[target.name] = str(target)
    private_dir(root / OUT_DIR)
    return staged


def staged_paths(paths: Sequence[str], root: Path) -> dict[str, str]:
    """Where ``stage_in`` put each path (what the cell gets as ``staged``)."""
    return {staged_name(path): str(root / staged_name(path)) for path in paths}


def stage_back(destination: str, root: Path | None = None) -> Path:
    """Copy the node's ``stage_out`` folder into ``destination`` (created if missing)."""
    source = (root or local_root()) / OUT_DIR
    target = Path(destination)
    target.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    return target


def clean(root: Path | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Remove this node's private folder; a site's ``$SLURM_TMPDIR`` is the site's."""
    env = os.environ if environ is None else environ
    if env.get("SLURM_TMPDIR"):
        return False
    root = root or local_root(env)
    if not root.name.startswith(PRIVATE_PREFIX) or not root.is_dir() \
            or root.stat().st_uid != os.getuid():
        return False
    shutil.rmtree(root, ignore_errors=True)
    return True


def main(argv: Sequence[str]) -> int:
    node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    if not argv or argv[0] not in {"in", "back", "clean"}:
        print("usage: python -m hpc_magics.node.staging in PATH... | back DEST | clean",
              file=sys.stderr)
        return 2
    action, args = argv[0], list(argv[1:])
    if action == "in":
        for name, local in stage_in(args).items():
            print(f"[hpc_magics] staged {name} on {node}: {local}", flush=True)
    elif action == "back":
        target = stage_back(args[0])
        print(f"[hpc_magics] stage_out of {node} copied back to {target}", flush=True)
    elif clean():
        print(f"[hpc_magics] removed {local_root()} on {node}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
