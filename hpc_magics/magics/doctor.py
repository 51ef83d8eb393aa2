"""``%hpc_doctor``: ``hpc-magics doctor``'s checks from the notebook, with the session's
request (profile, account, partition, qos, setup) and jobs folder, run in this kernel."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument

from .arguments import lazy_magic_arguments as magic_arguments
from .arguments import parsed_arguments


@magics_class
class DoctorMagics(Magics):
    @magic_arguments()
    @argument("--no-job", action="store_true",
              help="submit no test job: the nodes' view of the jobs folder, their Python and "
                   "the kernel ports are not checked")
    @argument("--timeout", type=float, default=120.0, metavar="S",
              help="how long to wait for the test job (default: 120)")
    @line_magic
    def hpc_doctor(self, line: str = "") -> None:
        """Check this installation from here, one line each: what holds, or what to fix.

        The same checks as ``hpc-magics doctor``: Slurm's commands and controller, the
        profile and why, the jobs folder (writable, private, seen by the nodes, locking),
        this kernel's Python on a node, the server extension and the server running this
        kernel, the kernel ports. One test job of a few seconds (``--no-job``: none).
        """
        from ..core.sites import detected_profile
        from ..doctor import Setting, lines, run

        args = parsed_arguments(self.hpc_doctor, line)
        if args.timeout <= 0:
            raise UsageError(f"%hpc_doctor --timeout {args.timeout:g}: give the seconds to "
                             "wait for the test job, above 0")
        assert self.shell is not None
        hpc = self.shell.magics_manager.registry["HpcMagicsKernel"]
        request = hpc.request
        name, reason = detected_profile()
        if request.profile != name:
            reason = "this session's: %hpc_resources --profile or c.HpcMagicsKernel.default_profile"
        setting = Setting(request, reason, hpc.jobs_root, run_job=not args.no_job,
                          timeout_s=args.timeout, say=print)
        print("\n".join(lines(run(setting))))
