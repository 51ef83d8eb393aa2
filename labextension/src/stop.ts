/**
 * The server-job dialog and "Save all and stop my server".
 *
 * Order matters: every open document is saved first, and the server is asked
 * to stop only when nothing is left unsaved. The server cancels its own job
 * (it never takes a job id from us). The jobs submitted from this server's
 * kernels that still run are listed: they outlive the server on purpose, so
 * they are left running unless the user ticks them for cancelling.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { Widget } from '@lumino/widgets';

import {
  formatClock,
  formatDuration,
  formatNodeHours
} from './format';
import {
  cancelJob,
  fetchJobs,
  fetchKernelJobs,
  IJob,
  IKernelJob,
  stopServer
} from './request';
import { LiveWidget } from './live';
import { ServerJob } from './serverjob';

export const SAVE_ALL_COMMAND = 'docmanager:save-all';
const STOP_LABEL = 'Save all and stop my server';
const JOBS_LABEL = 'My jobs';

/** Live details of the server's job, updated every second while shown. */
class ServerJobDetails extends LiveWidget<ServerJob> {
  constructor(job: ServerJob) {
    super(job, 'jp-HpcMagics-details');
  }

  protected render(): void {
    const job = this.source;
    const info = job.info;
    this.node.replaceChildren();
    if (!info || !job.inSlurmJob) {
      const text = document.createElement('p');
      text.textContent =
        job.phase === 'unreachable'
          ? `The server did not answer: ${job.lastError}`
          : 'This server does not run inside a Slurm job, so there is no allocation to stop from here.';
      this.node.appendChild(text);
      return;
    }
    const rows: Array<[string, string]> = [['Job', info.job_id as string]];
    if (info.job_name) {
      rows.push(['Name', info.job_name]);
    }
    if (info.partition) {
      rows.push(['Partition', info.partition]);
    }
    if (info.nodes !== null) {
      rows.push(['Nodes', String(info.nodes)]);
    }
    if (info.start_time !== null) {
      rows.push(['Started', formatClock(info.start_time)]);
    }
    const left = job.secondsLeft();
    if (info.end_time !== null && left !== null) {
      rows.push([
        'Walltime ends',
        `${formatClock(info.end_time)} (${formatDuration(left)} left)`
      ]);
    }
    const used = job.nodeHoursUsed();
    if (used !== null) {
      rows.push([
        'Node-hours',
        info.node_hours_total !== null
          ? `${formatNodeHours(used)} used of ${formatNodeHours(info.node_hours_total)}`
          : `${formatNodeHours(used)} used`
      ]);
    }
    const idle = job.secondsUntilIdleStop();
    if (info.idle_stop_minutes !== null && idle !== null) {
      rows.push([
        'Idle stop',
        `after ${formatDuration(info.idle_stop_minutes * 60)} without activity (in ${formatDuration(Math.max(0, idle))})`
      ]);
    }
    const table = document.createElement('table');
    for (const [label, value] of rows) {
      const tr = table.insertRow();
      const th = document.createElement('th');
      th.textContent = label;
      tr.appendChild(th);
      tr.insertCell().textContent = value;
    }
    this.node.appendChild(table);
    const note = document.createElement('p');
    note.className = 'jp-HpcMagics-note';
    note.textContent =
      'Closing the tab does not stop this job: it keeps using node-hours until its walltime ends.';
    this.node.appendChild(note);
  }
}

export async function showServerJobDialog(
  app: JupyterFrontEnd,
  job: ServerJob,
  docManager: IDocumentManager | null,
  openJobs: () => void
): Promise<void> {
  const body = new ServerJobDetails(job);
  const buttons = [
    Dialog.cancelButton({ label: 'Close' }),
    Dialog.okButton({ label: JOBS_LABEL, displayType: 'default' })
  ];
  if (job.inSlurmJob && job.phase !== 'stopped') {
    buttons.push(Dialog.warnButton({ label: STOP_LABEL }));
  }
  const title = job.inSlurmJob
    ? `Your server's Slurm job ${job.info?.job_id}`
    : 'Your server';
  const result = await showDialog({ title, body, buttons });
  body.dispose();
  if (!result.button.accept) {
    return;
  }
  if (result.button.label === JOBS_LABEL) {
    openJobs();
  } else if (result.button.label === STOP_LABEL) {
    await saveAllAndStop(app, job, docManager);
  }
}

/** Names of open documents that still have unsaved changes. */
function unsavedDocuments(
  app: JupyterFrontEnd,
  docManager: IDocumentManager | null
): string[] {
  if (!docManager) {
    return [];
  }
  const names = new Set<string>();
  for (const widget of app.shell.widgets('main')) {
    const context = docManager.contextForWidget(widget);
    if (context && context.model.dirty) {
      names.add(context.path);
    }
  }
  return [...names];
}

async function saveAll(
  app: JupyterFrontEnd,
  docManager: IDocumentManager | null
): Promise<void> {
  if (app.commands.hasCommand(SAVE_ALL_COMMAND)) {
    await app.commands.execute(SAVE_ALL_COMMAND);
  }
  // The command may return before its saves finish: save what is still dirty
  // ourselves and wait for it.
  if (docManager) {
    const pending = new Map<string, Promise<void>>();
    for (const widget of app.shell.widgets('main')) {
      const context = docManager.contextForWidget(widget);
      if (context && context.model.dirty && !pending.has(context.path)) {
        pending.set(context.path, context.save());
      }
    }
    await Promise.all(pending.values());
  }
}

/** The still running jobs submitted from this server's kernels (none if unknown). */
async function jobsFromThisServer(): Promise<IJob[]> {
  try {
    const list = await fetchJobs();
    return list.jobs.filter(
      job =>
        job.from_this_server &&
        !job.final &&
        !job.is_server &&
        job.kind !== 'kernel'
    );
  } catch {
    return [];
  }
}

/** This server's Slurm kernel jobs: they end with it (none if unknown). */
async function kernelJobsOfThisServer(): Promise<IKernelJob[]> {
  try {
    return (await fetchKernelJobs()).kernels;
  } catch {
    return [];
  }
}

/** The confirmation's body: what happens, the kernel jobs that end with the
 * server, and a checkbox per other running job. */
class StopConfirmation extends Widget {
  constructor(jobId: string | null, kernels: IKernelJob[], jobs: IJob[]) {
    super();
    this.addClass('jp-HpcMagics-stop-confirm');
    const text = document.createElement('p');
    text.textContent =
      'All open documents are saved, then the server shuts down' +
      (jobId ? ` and its Slurm job ${jobId} is cancelled` : '') +
      '. Running kernels end.';
    this.node.appendChild(text);
    if (kernels.length > 0) {
      const intro = document.createElement('p');
      intro.textContent =
        'These kernels run as Slurm jobs; their jobs are cancelled with the server:';
      const list = document.createElement('ul');
      list.className = 'jp-HpcMagics-stop-kernels';
      for (const kernel of kernels) {
        const item = document.createElement('li');
        item.dataset.jobId = kernel.job_id;
        item.textContent = kernel.own_allocation
          ? `${kernel.kind} ${kernel.name}: a step of your allocation ${kernel.job_id} ` +
            '(only the step ends; your allocation keeps running)'
          : `${kernel.kind} ${kernel.name}: job ${kernel.job_id} (${kernel.state})`;
        list.appendChild(item);
      }
      this.node.append(intro, list);
    }
    if (jobs.length === 0) {
      const none = document.createElement('p');
      none.textContent = 'Jobs you submitted with %%sbatch keep running.';
      this.node.appendChild(none);
      return;
    }
    const intro = document.createElement('p');
    const one = jobs.length === 1;
    intro.textContent =
      `${one ? 'This job' : 'These jobs'}, started from this server, ` +
      `${one ? 'is' : 'are'} still queued or running. ${one ? 'It keeps' : 'They keep'} ` +
      'going after the server stops, on purpose; tick what to cancel now:';
    const list = document.createElement('ul');
    list.className = 'jp-HpcMagics-stop-jobs';
    for (const job of jobs) {
      const item = document.createElement('li');
      const label = document.createElement('label');
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.dataset.jobId = job.job_id;
      this._boxes.push(box);
      label.append(
        box,
        ` cancel job ${job.job_id}${job.name ? ` “${job.name}”` : ''} (${job.state})`
      );
      item.appendChild(label);
      list.appendChild(item);
    }
    this.node.append(intro, list);
  }

  /** The ids ticked for cancelling. */
  get toCancel(): string[] {
    return this._boxes
      .filter(box => box.checked)
      .map(box => box.dataset.jobId as string);
  }

  private _boxes: HTMLInputElement[] = [];
}

export async function saveAllAndStop(
  app: JupyterFrontEnd,
  job: ServerJob,
  docManager: IDocumentManager | null
): Promise<void> {
  const jobId = job.info?.job_id ?? null;
  const [kernels, running] = await Promise.all([
    kernelJobsOfThisServer(),
    jobsFromThisServer()
  ]);
  const body = new StopConfirmation(jobId, kernels, running);
  const confirm = await showDialog({
    title: 'Save all and stop my server?',
    body,
    buttons: [
      Dialog.cancelButton(),
      Dialog.warnButton({ label: 'Save all and stop' })
    ]
  });
  const toCancel = body.toCancel;
  body.dispose();
  if (!confirm.button.accept) {
    return;
  }
  for (const id of toCancel) {
    try {
      await cancelJob(id);
    } catch (error) {
      await showErrorMessage(
        `Job ${id} was not cancelled, the server keeps running`,
        String((error as Error).message ?? error)
      );
      return;
    }
  }
  try {
    await saveAll(app, docManager);
  } catch (error) {
    await showErrorMessage(
      'Saving failed, the server keeps running',
      String((error as Error).message ?? error)
    );
    return;
  }
  const unsaved = unsavedDocuments(app, docManager);
  if (unsaved.length > 0) {
    await showErrorMessage(
      'Unsaved documents, the server keeps running',
      `Save or close these first: ${unsaved.join(', ')}`
    );
    return;
  }
  const leftRunning = running
    .map(j => j.job_id)
    .filter(id => !toCancel.includes(id));
  try {
    const answer = await stopServer();
    job.markStopped();
    const kernelIds =
      answer.kernel_jobs ?? kernels.filter(k => !k.own_allocation).map(k => k.job_id);
    showStoppedPage(answer.job_id ?? jobId, leftRunning, toCancel, kernelIds);
  } catch (error) {
    await showErrorMessage(
      'The server did not stop',
      String((error as Error).message ?? error)
    );
  }
}

/** Cover the whole page: the server is gone, nothing here works any more. */
export function showStoppedPage(
  jobId: string | null,
  leftRunning: string[] = [],
  cancelled: string[] = [],
  kernelJobs: string[] = []
): void {
  const page = document.createElement('div');
  page.className = 'jp-HpcMagics-stopped';
  page.id = 'jp-HpcMagics-stopped';
  const box = document.createElement('div');
  const heading = document.createElement('h1');
  heading.textContent = 'Server stopped';
  const detail = document.createElement('p');
  detail.textContent =
    (jobId
      ? `Your documents were saved and Slurm job ${jobId} was cancelled; it no longer uses node-hours. `
      : 'Your documents were saved and the server shut down. ') +
    (kernelJobs.length > 0
      ? `Kernel jobs cancelled with it: job ${kernelJobs.join(', ')}. `
      : '') +
    (cancelled.length > 0 ? `Cancelled: job ${cancelled.join(', ')}. ` : '') +
    (leftRunning.length > 0
      ? `Still running, as you chose: job ${leftRunning.join(', ')}. `
      : '') +
    'You can close this tab.';
  box.append(heading, detail);
  page.appendChild(box);
  document.body.appendChild(page);
}
