"""The /hpc-magics REST routes against a real jupyter_server (outside any Slurm job)."""

from __future__ import annotations

import concurrent.futures
import re
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from tornado import web

from .conftest import HTTP_TIMEOUT_S, StartLocal, execute, processes_mentioning

pytestmark = pytest.mark.timeout(120)

ROUTES = {  # path → implemented methods, with a concrete id in the cancel route
    "hpc-magics/server": ("GET",),
    "hpc-magics/server/stop": ("POST",),
    "hpc-magics/server/keep-alive": ("POST",),
    "hpc-magics/jobs": ("GET",),
    "hpc-magics/jobs/events": ("GET",),
    "hpc-magics/kernels": ("GET",),
    "hpc-magics/jobs/12345/cancel": ("POST",),
}


def _authenticated_wrapper_code() -> Any:
    def probe(self: Any) -> None:
        return None

    return web.authenticated(probe).__code__


def registered_routes(monkeypatch: pytest.MonkeyPatch,
                      tmp_path: Path) -> list[tuple[str, type[web.RequestHandler]]]:
    """Every (pattern, handler) the extension added to a real, in-process tornado app."""
    from jupyter_server.serverapp import ServerApp

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    # the extension sets it for its kernels: undone after the test, not left to the next
    monkeypatch.setenv("HPC_MAGICS_SERVER_ID", "")
    app = ServerApp()
    app.initialize(argv=["--ServerApp.jpserver_extensions", "hpc_magics=True",
                         "--ip=127.0.0.1", "--port=0", "--allow-root", "--no-browser",
                         f"--ServerApp.root_dir={tmp_path}"],
                   find_extensions=False, new_httpserver=False)
    found: list[tuple[str, type[web.RequestHandler]]] = []

    def walk(router: Any) -> None:
        for rule in router.rules:
            if hasattr(rule.target, "rules"):
                walk(rule.target)
                continue
            regex = getattr(rule.matcher, "regex", None)
            if regex is not None and "hpc-magics" in regex.pattern:
                found.append((regex.pattern, rule.target))

    walk(app.web_app.default_router)
    return found


def test_every_registered_route_is_authenticated(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    routes = registered_routes(monkeypatch, tmp_path)
    assert len(routes) == len(ROUTES), f"routes changed, update ROUTES here: {routes}"
    authenticated = _authenticated_wrapper_code()
    unauthenticated = []
    for pattern, handler in routes:
        ours = []
        for name in handler.SUPPORTED_METHODS:
            method = getattr(handler, name.lower())
            if method is web.RequestHandler._unimplemented_method:
                continue
            if getattr(method, "__module__", "").startswith("hpc_magics"):
                ours.append(name)
                if getattr(method, "__code__", None) is not authenticated:
                    unauthenticated.append(f"{name} {pattern} ({handler.__name__})")
            else:
                # Inherited from jupyter_server: only its CORS preflight, public on purpose.
                assert name == "OPTIONS", f"{name} {pattern} inherited from {method}"
        paths = [p for p in ROUTES if re.fullmatch(pattern.lstrip("/"), p)]
        assert len(paths) == 1, f"{pattern} is not listed in ROUTES"
        assert set(ours) == set(ROUTES[paths[0]]), pattern
    assert not unauthenticated, "handler methods without @tornado.web.authenticated: " + \
        ", ".join(unauthenticated)


def test_every_route_refuses_requests_without_a_token(local_server: StartLocal) -> None:
    server = local_server()
    for path, methods in ROUTES.items():
        for method in methods:
            answer = requests.request(method, server.url + path, timeout=HTTP_TIMEOUT_S)
            assert answer.status_code == 403, f"{method} {path} without token: {answer.status_code}"
            wrong = requests.request(method, server.url + path, timeout=HTTP_TIMEOUT_S,
                                     headers={"Authorization": "token not-the-token"})
            assert wrong.status_code == 403, f"{method} {path} wrong token: {wrong.status_code}"
    assert server.answers()  # the refused stop request did not stop it


def test_cookie_session_needs_xsrf_for_posts(local_server: StartLocal) -> None:
    server = local_server()
    browser = requests.Session()
    page = browser.get(f"{server.url}lab?token={server.token}", timeout=HTTP_TIMEOUT_S)
    assert page.ok and "_xsrf" in browser.cookies
    assert browser.get(server.url + "hpc-magics/server", timeout=HTTP_TIMEOUT_S).ok
    for path in ("hpc-magics/server/keep-alive", "hpc-magics/server/stop",
                 "hpc-magics/jobs/12345/cancel"):
        refused = browser.post(server.url + path, timeout=HTTP_TIMEOUT_S)
        assert refused.status_code == 403, f"cookie POST {path} without XSRF: {refused.status_code}"
    allowed = browser.post(server.url + "hpc-magics/server/keep-alive", timeout=HTTP_TIMEOUT_S,
                           headers={"X-XSRFToken": browser.cookies["_xsrf"] or ""})
    assert allowed.status_code == 200
    assert server.answers()


def test_server_outside_a_job_reports_so(local_server: StartLocal) -> None:
    server = local_server()
    before = time.time()
    info = server.get("hpc-magics/server").json()
    assert info["in_slurm_job"] is False
    for key in ("job_id", "job_name", "partition", "nodes", "start_time", "end_time",
                "seconds_left", "node_hours_used", "node_hours_total", "idle_stop_minutes",
                "idle_stop_at"):
        assert info[key] is None, key
    assert before - 1 <= info["now"] <= time.time() + 1
    assert info["warn_minutes"] == [15, 5]


def test_jobs_route_answers_outside_a_job(local_server: StartLocal) -> None:
    server = local_server()
    answer = server.get("hpc-magics/jobs")
    assert answer.ok
    data = answer.json()
    assert data["server_job_id"] is None
    assert isinstance(data["jobs"], list)
    # Either squeue answered or the error says why, in one line.
    assert data["updated"] is not None or "\n" not in (data["error"] or "x")


def test_cancel_of_a_job_that_is_not_the_users_is_404(local_server: StartLocal,
                                                     slurm_cluster: Any) -> None:
    # whose job it is, Slurm says (while it cannot, the answer is 502, not 404)
    server = local_server()
    answer = server.post("hpc-magics/jobs/999999999/cancel")
    assert answer.status_code == 404
    assert "999999999" in answer.json()["message"]
    not_an_id = server.post("hpc-magics/jobs/1;scancel 2/cancel")
    assert not_an_id.status_code == 404


def test_keep_alive_postpones_idle_stop_but_polling_does_not(local_server: StartLocal) -> None:
    server = local_server("--HpcMagicsServer.idle_stop_minutes=10",
                          "--HpcMagicsServer.idle_warning_minutes=2")
    first = server.get("hpc-magics/server").json()
    assert first["idle_stop_minutes"] == 10
    assert first["idle_warning_minutes"] == 2
    assert first["idle_stop_at"] == pytest.approx(first["now"] + 600, abs=30)
    time.sleep(1.2)
    # What an open JupyterLab tab does every few seconds, plus our own polling:
    for path in ("api/kernels", "api/sessions", "api/terminals", "api/contents",
                 "hpc-magics/server", "hpc-magics/jobs", "hpc-magics/jobs/events?since=0",
                 "hpc-magics/kernels"):
        assert server.get(path).ok, path
    polled = server.get("hpc-magics/server").json()
    # a poll that counted would move it by the 1.2 s slept; a few ms come from start-up
    # stamps (the kernel manager's, the terminals') set just after the first answer, seen
    # under load
    assert polled["idle_stop_at"] == pytest.approx(first["idle_stop_at"], abs=0.5)
    kept = server.post("hpc-magics/server/keep-alive").json()
    assert kept["idle_stop_at"] >= first["idle_stop_at"] + 1.0
    after = server.get("hpc-magics/server").json()
    assert after["idle_stop_at"] == pytest.approx(kept["idle_stop_at"], abs=0.5)
    time.sleep(1.2)
    saved = requests.put(server.url + "api/contents/notes.txt", headers=server.headers(),
                         json={"type": "file", "format": "text", "content": "hi"},
                         timeout=HTTP_TIMEOUT_S)
    assert saved.status_code == 201
    after_save = server.get("hpc-magics/server").json()
    assert after_save["idle_stop_at"] >= kept["idle_stop_at"] + 1.0


def test_a_busy_kernel_keeps_the_server_alive(local_server: StartLocal) -> None:
    server = local_server("--HpcMagicsServer.idle_stop_minutes=0.0667",
                          "--HpcMagicsServer.idle_check_interval_s=0.5")
    kernel = server.post("api/kernels", json={"name": "python3"}).json()
    assert execute(server, kernel["id"], "print('ready')").strip() == "ready"
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(execute, server, kernel["id"],
                              "import time; time.sleep(9); print('slept')")
        time.sleep(7)  # well past the 4 s idle limit, but the kernel is busy
        assert server.answers()
        assert running.result(timeout=30).strip() == "slept"
    assert server.process is not None
    assert server.process.wait(timeout=30) == 0  # idle once the cell finished


def test_idle_stop_outside_a_job_shuts_the_server_down(local_server: StartLocal) -> None:
    server = local_server("--HpcMagicsServer.idle_stop_minutes=0.05",
                          "--HpcMagicsServer.idle_check_interval_s=0.5")
    assert server.get("hpc-magics/server").json()["idle_stop_minutes"] == pytest.approx(0.05)
    assert server.process is not None
    assert server.process.wait(timeout=30) == 0
    assert "no activity for 3 s" in server.log
    assert not list(server.runtime_dir.glob("jpserver-*.json"))


def test_stop_outside_a_job_ignores_any_job_id_and_shuts_down(local_server: StartLocal) -> None:
    server = local_server()
    kernel = server.post("api/kernels", json={"name": "python3"}).json()
    answer = server.post("hpc-magics/server/stop?job_id=4242", json={"job_id": "4242"})
    assert answer.json() == {"stopping": True, "job_id": None, "kernel_jobs": [],
                             "allocations_left_running": []}
    assert server.process is not None
    assert server.process.wait(timeout=30) == 0
    assert "scancel" not in server.log
    # The kernel was shut down with the server.
    deadline = time.monotonic() + 10
    while processes_mentioning(kernel["id"]):
        assert time.monotonic() < deadline, processes_mentioning(kernel["id"])
        time.sleep(0.2)


def test_traits_come_from_jupyter_server_config_py(local_server: StartLocal) -> None:
    server = local_server(config_py="c.HpcMagicsServer.idle_stop_minutes = 60\n"
                                    "c.HpcMagicsServer.idle_warning_minutes = 10\n"
                                    "c.HpcMagicsServer.warn_minutes = [30, 10]\n")
    info = server.get("hpc-magics/server").json()
    assert info["idle_stop_minutes"] == 60 and info["idle_warning_minutes"] == 10
    assert info["warn_minutes"] == [30, 10]
    assert info["idle_stop_at"] == pytest.approx(time.time() + 3600, abs=60)
