/**
 * hpc-magics-labextension: the JupyterLab server's own Slurm job in view.
 *
 * - status bar: `job 1234 · 2h41m left · 3.2 node-h` (or a quiet `no Slurm job`);
 * - click: job details and "Save all and stop my server";
 * - notifications before the walltime ends and before an idle auto-stop;
 * - a warning when the tab closes while the job keeps running;
 * - a jobs panel with Cancel;
 * - a notification when one of the user's jobs ends, with "Open folder";
 * - the job widget's `log · folder` links open in JupyterLab.
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon } from '@jupyterlab/ui-components';

import { JobsPanel } from './jobs';
import { KernelJobs } from './kerneljobs';
import {
  AllocationStatus,
  KernelJobsStatus,
  KernelPendingNotices
} from './kernelstatus';
import { JobEndNotifier, openJobFolder, openWidgetLink } from './notify';
import { ServerJob } from './serverjob';
import { ServerJobStatus } from './status';
import { saveAllAndStop, showServerJobDialog } from './stop';
import { IdleStopWarning, STOP_COMMAND, WalltimeWarnings } from './warnings';

const JOBS_COMMAND = 'hpc-magics:jobs';
const DETAILS_COMMAND = 'hpc-magics:server-job';
const CATEGORY = 'Slurm';

const jobsIcon = new LabIcon({
  name: 'hpc-magics:jobs',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<rect x="3" y="4" width="18" height="4" rx="1"/>' +
    '<rect x="3" y="10" width="18" height="4" rx="1"/>' +
    '<rect x="3" y="16" width="18" height="4" rx="1"/>' +
    '</g></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'hpc-magics-labextension:plugin',
  description:
    "Shows the server's Slurm job time left, stops it on request, lists your jobs.",
  autoStart: true,
  optional: [IStatusBar, ICommandPalette, IDocumentManager, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    docManager: IDocumentManager | null,
    labShell: ILabShell | null
  ) => {
    const job = new ServerJob();
    const kernels = new KernelJobs();
    // a kernel starting or ending: look at once (a pending job shows within seconds)
    app.serviceManager.kernels.runningChanged.connect(
      () => void kernels.refresh()
    );
    job.changed.connect(() => {
      if (job.phase === 'stopped') {
        kernels.stop();
      }
    });

    const jobsPanel = new JobsPanel(
      () => void app.commands.execute(STOP_COMMAND),
      folder => openJobFolder(app.commands, folder)
    );
    jobsPanel.title.icon = jobsIcon;
    if (labShell) {
      app.shell.add(jobsPanel, 'right', { rank: 950 });
    }
    const openJobs = () => {
      if (!jobsPanel.isAttached) {
        // Notebook 7 has a right side panel too; its main area holds the notebook only
        app.shell.add(jobsPanel, 'right');
      }
      app.shell.activateById(jobsPanel.id);
      void jobsPanel.refresh();
    };

    app.commands.addCommand(JOBS_COMMAND, {
      label: 'My Slurm Jobs',
      caption: 'List your Slurm jobs, with Cancel',
      execute: openJobs
    });
    app.commands.addCommand(DETAILS_COMMAND, {
      label: "Server's Slurm Job…",
      caption: 'Time left, node-hours, and stop',
      execute: () => showServerJobDialog(app, job, docManager, openJobs)
    });
    app.commands.addCommand(STOP_COMMAND, {
      label: 'Save All and Stop My Server…',
      caption: 'Save every open document, stop the server, cancel its Slurm job',
      isEnabled: () => job.phase !== 'stopped',
      execute: () => saveAllAndStop(app, job, docManager)
    });
    if (palette) {
      for (const command of [JOBS_COMMAND, DETAILS_COMMAND, STOP_COMMAND]) {
        palette.addItem({ command, category: CATEGORY });
      }
    }

    if (statusBar) {
      const item = new ServerJobStatus(
        job,
        () => void app.commands.execute(DETAILS_COMMAND)
      );
      item.id = 'hpc-magics-status';
      statusBar.registerStatusItem('hpc-magics-labextension:status', {
        item,
        align: 'left',
        rank: 1000
      });
      const kernelItem = new KernelJobsStatus(kernels, openJobs);
      kernelItem.id = 'hpc-magics-kernels';
      statusBar.registerStatusItem('hpc-magics-labextension:kernels', {
        item: kernelItem,
        align: 'left',
        rank: 1001
      });
      const allocationItem = new AllocationStatus(job);
      allocationItem.id = 'hpc-magics-allocation';
      statusBar.registerStatusItem('hpc-magics-labextension:allocation', {
        item: allocationItem,
        align: 'left',
        rank: 1002
      });
    }

    // the job widget's `log · folder` links: a widget's HTML cannot call JupyterLab
    document.body.addEventListener('click', event => {
      const link = (event.target as Element | null)?.closest?.(
        '[data-hpc-magics-open]'
      );
      if (link) {
        event.preventDefault();
        openWidgetLink(
          app.commands,
          link.getAttribute('data-hpc-magics-open'),
          link.getAttribute('data-path') ?? ''
        );
      }
    });

    // A job ended: the notification, and the panel shows it at the same moment.
    const notifier = new JobEndNotifier(app.commands, openJobs);
    notifier.ended.connect(() => {
      if (jobsPanel.isAttached) {
        void jobsPanel.refresh();
      }
    });
    notifier.start();

    new WalltimeWarnings(job, app.commands);
    new IdleStopWarning(job, kernels);
    new KernelPendingNotices(kernels);

    // Closing the tab does not end the job: say so before the tab goes.
    window.addEventListener('beforeunload', event => {
      if (job.inSlurmJob && job.phase === 'running') {
        event.preventDefault();
        event.returnValue = '';
      }
    });
  }
};

export default plugin;
