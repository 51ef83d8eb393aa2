"""The server's token never lands in logs, job folders or notebooks.

A real jupyter server with a known token (also in the environment, as JupyterHub puts
``JUPYTERHUB_API_TOKEN`` there) runs a job on the cluster from one of its kernels; then
every file the server, the kernel and the job wrote is searched for the token.
Jupyter's own runtime files (connection and server info, private to the user, where
Jupyter keeps the token by design) are the only place it may be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server.conftest import StartLocal, execute

pytestmark = [pytest.mark.timeout(300), pytest.mark.slurm]

JOB_CELL = """
%load_ext hpc_magics
%hpc_resources --profile lab --backend slurm -t 5
"""
SBATCH_CELL = """%%sbatch --wait --name token-check
import os
seen = {k: v for k, v in os.environ.items() if 'TOKEN' in k}
print('token variables on the node:', sorted(seen))
"""


def test_the_token_is_nowhere_but_jupyters_runtime_files(
        local_server: StartLocal, slurm_cluster: object, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    import secrets

    hub_token = secrets.token_hex(24)
    # as a hub starts a single-user server: its API token in the environment
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", hub_token)
    monkeypatch.setenv("JPY_API_TOKEN", hub_token)
    server = local_server("--log-level=DEBUG")
    kernel = server.post("api/kernels", json={"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    said = execute(server, kernel_id, JOB_CELL)
    said += execute(server, kernel_id, SBATCH_CELL, timeout=180)
    said += execute(server, kernel_id, "print(sorted(seen))")
    assert "token variables on the node: []" in said, said
    # the notebook, saved through the server as JupyterLab saves it
    notebook = {"cells": [
        {"cell_type": "code", "source": cell, "metadata": {}, "execution_count": n,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": said}]}
        for n, cell in enumerate((JOB_CELL, SBATCH_CELL), start=1)],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    import requests

    answer = requests.put(server.url + "api/contents/token-check.ipynb",
                          headers=server.headers(), timeout=30,
                          data=json.dumps({"type": "notebook", "content": notebook}))
    assert answer.status_code in {200, 201}, answer.text

    job_folders = [meta.parent for meta in server.folder.rglob("meta.json")]
    assert job_folders and any((p / "results.pkl").exists() for p in job_folders)
    log = server.folder / "server.log"
    for token in (server.token, hub_token):
        holding = [str(path.relative_to(server.folder)) for path in _files(server.folder)
                   if token.encode() in path.read_bytes() and path != log
                   and not _jupyter_runtime_file(path, server.folder)]
        assert holding == [], f"a token is written in {holding}"
        # at DEBUG, Jupyter echoes its command line: the token is not there, but in its
        # environment
        logged = [line for line in server.log.splitlines() if token in line]
        assert logged == [], f"the log shows a token: {logged}"


def _files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and not path.is_symlink()]


def _jupyter_runtime_file(path: Path, folder: Path) -> bool:
    """Jupyter's own kernel connection and server info files (private, token by design)."""
    runtime = folder / "runtime"
    return runtime in path.parents and (path.name.startswith(("kernel-", "jpserver-"))
                                        and path.suffix in {".json", ".html"})
