"""Every /hpc-magics/ route asks jupyter_server's Authorizer, not only the token.

A site (or JupyterHub's read-only sharing) limits a user with an ``Authorizer``; a route
that is only ``@web.authenticated`` lets that user stop the server and cancel jobs. The
Authorizers here are configured as a site would (``c.ServerApp.authorizer_class``) on a
real ``jupyter server`` with the extension.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from server.conftest import StartLocal

from hpc_magics.scheduler import commands

from .test_routes import concrete_paths

pytestmark = pytest.mark.timeout(180)

AUTHORIZER_CONFIG = """
from jupyter_server.auth.authorizer import Authorizer

class {name}(Authorizer):
    def is_authorized(self, handler, user, action, resource):
        with open({asked!r}, "a") as asked:
            asked.write(f"{{handler.request.method}} {{handler.request.path}} {{action}} "
                        f"{{resource}}\\n")
        return {rule}

c.ServerApp.authorizer_class = {name}
c.HpcMagicsServer.shutdown_grace_s = 0.0
"""


def configured(name: str, rule: str, asked: Path) -> str:
    """A server config whose Authorizer answers ``rule`` and notes every question."""
    return AUTHORIZER_CONFIG.format(name=name, rule=rule, asked=str(asked))


def test_every_route_asks_the_authorizer(local_server: StartLocal, tmp_path: Path) -> None:
    asked = tmp_path / "asked.txt"
    server = local_server(config_py=configured(
        "NotHpcMagics", "resource != 'hpc_magics'", asked))
    for path, methods in concrete_paths():
        for method in methods:
            answer = server.get(path) if method == "GET" else server.post(path)
            assert answer.status_code == 403, f"{method} /{path}: {answer.status_code}"
    questions = asked.read_text() if asked.exists() else ""
    for path, methods in concrete_paths():
        for method in methods:
            assert f"{method} /{path} " in questions, f"{method} /{path} never asked"
    assert server.answers(), "a refused stop stopped the server"


@pytest.mark.slurm
def test_a_read_only_user_neither_stops_nor_cancels(local_server: StartLocal, tmp_path: Path,
                                                    slurm_cluster: object) -> None:
    asked = tmp_path / "asked.txt"
    server = local_server(config_py=configured("ReadOnly", "action == 'read'", asked))
    submitted = commands.run(["sbatch", "--parsable", "-t", "5", "-o", "/dev/null",
                              "-J", "authorizer-sleeper", "--wrap", "sleep 300"], timeout=30)
    assert submitted.ok, submitted.first_error_line()
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        listed = server.get("hpc-magics/jobs")
        assert listed.status_code == 200, listed.text  # reading is allowed
        cancel = server.post(f"hpc-magics/jobs/{job_id}/cancel")
        assert cancel.status_code == 403, cancel.text
        stop = server.post("hpc-magics/server/stop")
        assert stop.status_code == 403, stop.text
        # the cancel route scancels before it answers: the refused one left the job alone
        state = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
        assert state.stdout.strip() in {"PENDING", "RUNNING"}, state
        assert server.get("hpc-magics/server").status_code == 200  # after any stop callback
        assert "stopping the server" not in server.log
        questions = asked.read_text()
        assert f"POST /hpc-magics/jobs/{job_id}/cancel execute hpc_magics" in questions
        assert "POST /hpc-magics/server/stop execute hpc_magics" in questions
    finally:
        commands.run(["scancel", job_id], timeout=30)
