"""Browser tests: real JupyterLab servers (here and inside Slurm jobs) driven by Chromium.

Chromium is Debian's (`apt-get install chromium fonts-liberation`), driven by Playwright's
Python API; `playwright install` cannot download browsers on these machines.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from server.conftest import port_from_runtime, server_info_in, server_port_option

from hpc_magics.scheduler import commands

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
SERVER_START_TIMEOUT_S = 90.0
REPO_ROOT = Path(__file__).resolve().parents[2]
# The labextension built from this clone (scripts/run-tests and `jlpm build:prod` put it
# here); it comes first on JUPYTER_PATH, so the browser runs this clone's front end even
# when the Python environment holds another clone's.
BUILT_LABEXTENSION = REPO_ROOT / "hpc_magics" / "labextension"
LABEXTENSION_NAME = "hpc-magics-labextension"
# Where a developer wants screenshots kept; by default they go to the test's tmp_path.
SCREENSHOT_DIR_VARIABLE = "HPC_MAGICS_E2E_SCREENSHOTS"
# The README's pictures (scripts/refresh-screenshots sets it to docs/screenshots): each
# cropped to one element; without it they go to the test's tmp_path.
DOC_SCREENSHOT_DIR_VARIABLE = "HPC_MAGICS_SCREENSHOTS"
DOC_SCREENSHOT_MAX_BYTES = 200_000


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab server the browser can open."""

    url: str
    token: str
    root_dir: Path
    job_id: str | None = None

    def lab_url(self, path: str = "lab") -> str:
        return f"{self.url}/{path}?token={self.token}"

    def api(self, method: str, path: str, timeout: float = 10.0,
            body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"{self.url}/{path}", method=method,
            headers={"Authorization": f"token {self.token}"},
            data=json.dumps(body or {}).encode() if method == "POST" else None)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (urllib.error.URLError, OSError):
            return 0, b""
        except http.client.HTTPException as error:  # something not HTTP answered there
            return 0, f"not an HTTP answer: {error!r}".encode()


def write_lab_settings(settings_dir: Path) -> Path:
    """A JupyterLab settings dir with the 'Jupyter news?' toast and update checks off."""
    target = settings_dir / "@jupyterlab" / "apputils-extension"
    target.mkdir(parents=True, exist_ok=True)
    (target / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return settings_dir


def write_notebook(path: Path, source: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(source))
    notebook.metadata["kernelspec"] = {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, str(path))
    return path


def this_clones_jupyter_path(folder: Path) -> str | None:
    """A JUPYTER_PATH entry whose labextensions/ holds this clone's built labextension."""
    if not (BUILT_LABEXTENSION / "package.json").is_file():
        return None
    target = folder / "labextensions" / LABEXTENSION_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(BUILT_LABEXTENSION, target_is_directory=True)
    return str(folder)


def notebook_sources(path: Path) -> str:
    notebook = nbformat.read(str(path), as_version=4)
    return "\n".join(str(cell.source) for cell in notebook.cells)


def lab_argv(root_dir: Path, app: str = "jupyterlab") -> list[str]:
    """``app``: ``jupyterlab``, or ``notebook`` for Notebook 7. The token goes in the
    environment (``JUPYTER_TOKEN``): a command line is readable by every user. The port:
    server_port_option (port_from_runtime reads the one the server took)."""
    return [
        sys.executable, "-m", app, "--no-browser", "--allow-root",
        "--ip=127.0.0.1", server_port_option(), f"--ServerApp.root_dir={root_dir}",
    ]


def wait_for_server(lab: Lab, alive: Callable[[], bool], describe: Callable[[], str]) -> None:
    """Wait until the server answers /api/status; fail early when its process/job ended."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    answered = b""
    while time.monotonic() < deadline:
        status, answered = lab.api("GET", "api/status", timeout=2.0)
        if status == 200:
            return
        if not alive():
            pytest.fail(f"JupyterLab ended before answering:\n{describe()}", pytrace=False)
        time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S:.0f}s (last: "
                f"{answered[:200]!r}):\n{describe()}", pytrace=False)


def processes_mentioning(text: str) -> list[int]:
    """Process ids whose command line contains ``text`` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state = stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else "?"
        if text in cmdline and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


# ------------------------------------------------------------------------------ browser

@pytest.fixture(scope="session")
def chromium_browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: apt-get install -y --no-install-recommends "
                    "chromium fonts-liberation (scripts/run-tests does it)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium_browser: object, request: pytest.FixtureRequest,
         tmp_path: Path) -> Iterator[object]:
    context = chromium_browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": 1400, "height": 850})
    page = context.new_page()
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        try:
            page.screenshot(path=str(screenshot_path(tmp_path, "failure")))
        except Exception as error:  # a screenshot is a courtesy; the test already failed
            print(f"no failure screenshot: {error}")
    context.close()


def screenshot_path(tmp_path: Path, name: str) -> Path:
    folder = Path(os.environ.get(SCREENSHOT_DIR_VARIABLE) or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"


def doc_screenshot(locator: Any, name: str, tmp_path: Path, *, hidden: tuple[str, ...] = (),
                   for_readme: bool = True) -> Path:
    """``NAME.png`` of the element ``locator`` for the README (``for_readme=False``: only in
    ``tmp_path``); fails when it would show one of ``hidden`` (the server's token) or is too
    big to put in a repository."""
    shown = str(locator.inner_text())
    for secret in hidden:
        assert secret not in shown, f"the {name} screenshot would show a secret"
    wanted = os.environ.get(DOC_SCREENSHOT_DIR_VARIABLE) if for_readme else None
    folder = Path(wanted or tmp_path).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    locator.screenshot(path=str(path), animations="disabled", caret="hide")
    size = path.stat().st_size
    assert size < DOC_SCREENSHOT_MAX_BYTES, f"{path} is {size} bytes: crop it smaller"
    return path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
        item: pytest.Item, call: pytest.CallInfo[None],
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # Lets the `page` fixture know whether the test failed (for the failure screenshot).
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


# ------------------------------------------------------------------------------ servers

LocalLabFactory = Callable[..., Lab]


@pytest.fixture
def start_local_lab(tmp_path: Path) -> Iterator[LocalLabFactory]:
    """``start_local_lab(*extra_args)``: JupyterLab on 127.0.0.1 (random port, token),
    outside any Slurm job; every server started is shut down after the test."""
    started: list[tuple[Lab, subprocess.Popen[bytes]]] = []

    def start(*extra_args: str, app: str = "jupyterlab",
              env_changes: dict[str, str] | None = None) -> Lab:
        home = tmp_path / f"lab{len(started)}"
        root_dir = home / "work"
        root_dir.mkdir(parents=True)
        token = secrets.token_hex(16)
        env = commands.scrubbed_environment()
        env["JUPYTERLAB_SETTINGS_DIR"] = str(write_lab_settings(home / "lab-settings"))
        env["JUPYTER_RUNTIME_DIR"] = str(home / "runtime")
        env["JUPYTER_TOKEN"] = token
        jupyter_path = this_clones_jupyter_path(home / "jupyter-path")
        if jupyter_path:
            env["JUPYTER_PATH"] = jupyter_path
        env.update(env_changes or {})
        log_path = home / "jupyter-lab.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*lab_argv(root_dir, app), *extra_args], stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=root_dir, start_new_session=True)
        port = port_from_runtime(server_info_in(home / "runtime"), lambda: process.poll() is None,
                                 lambda: log_path.read_text(errors="replace")[-3000:],
                                 timeout=SERVER_START_TIMEOUT_S)
        lab = Lab(url=f"http://127.0.0.1:{port}", token=token, root_dir=root_dir)
        started.append((lab, process))
        wait_for_server(lab, lambda: process.poll() is None,
                        lambda: log_path.read_text(errors="replace")[-3000:])
        return lab

    yield start
    for lab, process in started:
        if process.poll() is None:
            lab.api("POST", "api/shutdown", timeout=5.0)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture
def local_lab(start_local_lab: LocalLabFactory) -> Lab:
    return start_local_lab()


@dataclass(frozen=True)
class SlurmLab:
    lab: Lab
    job_id: str
    log_path: Path
    runtime_dir: Path  # kernels' connection files: every kernel's command line names it


def submit_lab_job(tmp_path: Path, time_limit: str, name: str, app: str = "jupyterlab",
                   extra_args: tuple[str, ...] = ()) -> SlurmLab:
    """sbatch a job that runs `jupyter lab` (``app="notebook"``: Notebook 7) on a test node
    with a known port and token."""
    root_dir = tmp_path / "work"
    root_dir.mkdir(parents=True)
    token = secrets.token_hex(16)
    settings_dir = write_lab_settings(tmp_path / "lab-settings")
    log_path = tmp_path / "slurm-lab.log"
    script = tmp_path / "lab-job.sh"
    jupyter_path = this_clones_jupyter_path(tmp_path / "jupyter-path")
    script.write_text("\n".join([
        "#!/bin/bash",
        *([f"export JUPYTER_PATH={shlex.quote(jupyter_path)}"] if jupyter_path else []),
        f"export JUPYTERLAB_SETTINGS_DIR={shlex.quote(str(settings_dir))}",
        f"export JUPYTER_RUNTIME_DIR={shlex.quote(str(tmp_path / 'runtime'))}",
        f"export JUPYTER_TOKEN={token}",
        f"cd {shlex.quote(str(root_dir))}",
        "exec " + shlex.join([*lab_argv(root_dir, app), *extra_args]),
        "",
    ]))
    submitted = commands.run(
        ["sbatch", "--parsable", "-J", name, "-t", time_limit, "-N", "1", "-c", "1",
         "--mem=1000", "-o", str(log_path), str(script)], timeout=30)
    assert submitted.ok, f"sbatch failed: {submitted.first_error_line()}"
    job_id = submitted.stdout.strip().split(";")[0]

    def job_alive() -> bool:
        answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=10)
        return answer.ok and answer.stdout.strip() in {"PENDING", "CONFIGURING", "RUNNING"}

    def describe() -> str:
        log = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else "(no log)"
        return f"job {job_id}, log {log_path}:\n{log}"

    try:
        port = port_from_runtime(server_info_in(tmp_path / "runtime"), job_alive, describe,
                                 timeout=SERVER_START_TIMEOUT_S)
        lab = Lab(url=f"http://127.0.0.1:{port}", token=token, root_dir=root_dir,
                  job_id=job_id)
        wait_for_server(lab, job_alive, describe)
    except BaseException:
        commands.run(["scancel", job_id], timeout=10)
        raise
    return SlurmLab(lab=lab, job_id=job_id, log_path=log_path,
                    runtime_dir=tmp_path / "runtime")


def end_job(job_id: str) -> None:
    commands.run(["scancel", job_id], timeout=10)


@pytest.fixture
def jobs_to_cancel() -> Iterator[list[str]]:
    """Job ids the test submitted: cancelled at the end, whatever happened."""
    ids: list[str] = []
    yield ids
    for job_id in ids:
        commands.run(["scancel", job_id], timeout=30)


def run_from_the_palette(page: Any, label: str) -> None:
    """Open JupyterLab's command palette from the View menu and run ``label``. The menu,
    not Ctrl+Shift+C: a click waits until the page takes it, where keys sent to a page still
    busy loading are lost (seen under load: the palette never opened)."""
    page.locator(".lm-MenuBar-item", has_text="View").click()
    page.locator(".lm-Menu-item", has_text="Activate Command Palette").click()
    search = page.locator(".lm-CommandPalette-input")
    search.wait_for(state="visible")
    search.fill(label)
    page.locator(".lm-CommandPalette-item", has_text=label).first.click()
