"""``hpc-magics kernel install|list|remove|cleanup|connect``: kernelspecs whose kernel runs
as a Slurm job, and the kernel jobs a Jupyter server left running."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..core.cost import cost_line
from ..core.errors import InvalidRequest
from ..core.flags import add_flag_arguments, flag_values
from ..core.jobids import require_job_id
from ..core.resources import ResourceRequest, updated
from ..core.sites import default_profile_name
from .spec import PROVISIONER_NAME, KernelRequest, display_name
from .tunnel import TUNNELS


def add_parser(subcommands: argparse._SubParsersAction) -> None:
    parser = subcommands.add_parser(
        "kernel", help="install a Jupyter kernel that runs as a Slurm job",
        description="Kernelspecs whose kernel runs on a compute node, as a Slurm job.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    install = actions.add_parser(
        "install", help="write a kernelspec NAME whose kernel runs as a Slurm job",
        description="Write kernelspec NAME: picking it submits a job with this request that "
                    "runs kernel K on the node; shutting the kernel down cancels the job.")
    install.add_argument("name", metavar="NAME", help="the kernelspec's name (a-z, 0-9, -_.)")
    install.add_argument("--profile", default=None,
                         help="cluster profile (default: $HPC_MAGICS_PROFILE or this cluster's)")
    install.add_argument("--kernel", default="python3", metavar="K",
                         help="the installed kernel to run on the node (default: python3)")
    install.add_argument("--display-name", default=None, help="the launcher's label "
                         "(default: K's, with the request: 'Python 3 (Slurm: debug, 1h)')")
    install.add_argument("--jobid", default=None, metavar="ID", help="start the kernel as a "
                         "step of this allocation of yours (salloc, sbatch) instead of a job")
    install.add_argument("--tunnel", choices=TUNNELS, default=None,
                         help="how this host reaches the kernel: tcp to the node's address, "
                         "or ssh: its ports forwarded through `ssh NODE` (where the nodes' "
                         "ports are closed; default: the profile's [kernel] tunnel, else tcp)")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (the default)")
    where.add_argument("--sys-prefix", action="store_true",
                       help="in this Python's environment (sys.prefix)")
    where.add_argument("--prefix", type=Path, default=None, metavar="DIR",
                       help="under DIR/share/jupyter/kernels")
    add_flag_arguments(install, "shell line run in the job before the kernel (repeatable)")
    install.add_argument("--python", default=sys.executable,
                         help="the Python with hpc_magics on the node (default: this one)")
    install.set_defaults(run=run_install)
    actions.add_parser("list", help="the Slurm kernels installed (`jupyter kernelspec "
                       "remove NAME` removes one)").set_defaults(run=run_list)
    actions.add_parser("cleanup", help="cancel the kernel jobs a killed server or notebook "
                       "left behind").set_defaults(run=run_cleanup)
    connect = actions.add_parser(
        "connect", help="reach a kernel job again whose Jupyter server is gone",
        description="Write a connection file for job JOB's kernel (for jupyter console "
                    "--existing); with --tunnel ssh, reopen its tunnel until Ctrl-C.")
    connect.add_argument("job", metavar="JOB", help="the kernel's job id")
    connect.set_defaults(run=run_connect)


def kernelspec(args: argparse.Namespace) -> tuple[dict[str, Any], KernelRequest, Path]:
    """The kernel.json text, the checked request, and the wrapped kernel's resource folder."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    jobid = str(require_job_id(args.jobid)) if args.jobid else None
    request = updated(ResourceRequest(profile=args.profile or default_profile_name(),
                                      backend="slurm"), flag_values(args))
    kernel = KernelRequest(request, args.python, jobid, args.tunnel)
    problems = kernel.check()
    try:
        wrapped = KernelSpecManager().get_kernel_spec(args.kernel)
    except NoSuchKernel:
        raise InvalidRequest(f"--kernel {args.kernel!r} is not an installed kernel: see "
                             "`jupyter kernelspec list`") from None
    if wrapped.metadata.get("kernel_provisioner", {}).get("provisioner_name") == \
            PROVISIONER_NAME:
        raise InvalidRequest(f"--kernel {args.kernel!r} is itself a Slurm kernel: wrap the "
                             "kernel it runs instead")
    for problem in problems:
        print(f"hpc-magics kernel: {problem}", file=sys.stderr)
    # supported_encryption kept: the node gives such a kernel CurveZMQ keys (provisioner.py)
    metadata = {k: v for k, v in wrapped.metadata.items() if k != "kernel_provisioner"}
    metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER_NAME,
                                      "config": kernel.to_config()}
    argv = [part.replace("{resource_dir}", wrapped.resource_dir) for part in wrapped.argv]
    spec = {"argv": argv, "env": wrapped.env, "language": wrapped.language,
            "display_name": args.display_name or display_name(wrapped.display_name, kernel),
            "interrupt_mode": wrapped.interrupt_mode, "metadata": metadata}
    return spec, kernel, Path(wrapped.resource_dir)


def run_install(args: argparse.Namespace) -> int:
    from jupyter_client.kernelspec import KernelSpecManager

    spec, kernel, resources = kernelspec(args)
    with tempfile.TemporaryDirectory() as staging:
        for item in resources.iterdir():  # logos and the like, not the kernel.json
            if item.is_file() and item.name != "kernel.json":
                shutil.copy(item, staging)
        (Path(staging) / "kernel.json").write_text(json.dumps(spec, indent=1))
        prefix = str(args.prefix) if args.prefix else (sys.prefix if args.sys_prefix else None)
        target = KernelSpecManager().install_kernel_spec(
            staging, kernel_name=args.name, user=prefix is None, prefix=prefix)
    print(f"installed kernel {args.name!r}: {spec['display_name']} in {target}")
    if kernel.connection_route() == "ssh":
        print("reached through an SSH tunnel: `ssh NODE` must work from this host without a "
              "password (keys and known_hosts in ~/.ssh/config)")
    if not kernel.jobid:
        print(f"each start submits one job: {cost_line(kernel.request, kernel.profile())}; "
              "shutting the kernel down cancels it")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from jupyter_client.kernelspec import KernelSpecManager

    from .orphans import offer_left_behind

    kernels = {name: entry for name, entry in KernelSpecManager().get_all_specs().items()
               if entry["spec"].get("metadata", {}).get("kernel_provisioner", {})
               .get("provisioner_name") == PROVISIONER_NAME}
    if not kernels:
        print("no Slurm kernels installed: hpc-magics kernel install NAME [sbatch options]")
    for name, entry in sorted(kernels.items()):
        print(f"{name}  {entry['spec']['display_name']}  ({entry['resource_dir']})")
    offer_left_behind("hpc-magics kernel cleanup")
    return 0


def run_cleanup(args: argparse.Namespace) -> int:
    from .orphans import cancel, left_behind

    found = left_behind()
    if not found:
        print("no kernel jobs left behind")
    for line in cancel(found):
        print(line)
    return 0


def run_connect(args: argparse.Namespace) -> int:
    from .reconnect import connect

    path, tunnel = connect(str(require_job_id(args.job)))
    print(f"kernel job {args.job}: connect with `jupyter console --existing {path}`",
          flush=True)
    if tunnel is None:
        return 0
    print(f"the SSH tunnel to {tunnel.node} stays open until Ctrl-C", flush=True)
    try:
        assert tunnel.process is not None
        tunnel.process.wait()  # ssh ends with the node (ServerAlive) or Ctrl-C
    except KeyboardInterrupt:
        pass
    finally:
        tunnel.close()
        path.unlink(missing_ok=True)  # its ports are closed: of no use any more
    return 0

