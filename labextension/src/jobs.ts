/**
 * The jobs panel: the user's Slurm jobs from GET /hpc-magics/jobs (states as
 * the server's watcher decided them; jobs that ended recently stay listed), a
 * Cancel button per live job, Open folder for ended ones. Refreshed every
 * 30 s while visible, and at once when a job ends (the end notification).
 */
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { formatDuration } from './format';
import { cancelJob, fetchJobs, IJob, IJobList } from './request';

export const JOBS_REFRESH_MS = 30_000;

function timeText(job: IJob): string {
  const elapsed = job.elapsed_s !== null ? formatDuration(job.elapsed_s) : '–';
  const limit =
    job.time_limit_s !== null ? formatDuration(job.time_limit_s) : '–';
  return `${elapsed} / ${limit}`;
}

export class JobsPanel extends Widget {
  constructor(
    private readonly _onStopServer: () => void,
    private readonly _openFolder: (folder: string) => void
  ) {
    super();
    this.id = 'hpc-magics-jobs';
    this.addClass('jp-HpcMagics-jobs');
    this.title.caption = 'My Slurm jobs';

    const header = document.createElement('div');
    header.className = 'jp-HpcMagics-jobs-header';
    const heading = document.createElement('h2');
    heading.textContent = 'My Slurm jobs';
    const refresh = document.createElement('button');
    refresh.className = 'jp-Button jp-mod-styled jp-mod-reject';
    refresh.textContent = 'Refresh';
    refresh.addEventListener('click', () => void this.refresh());
    header.append(heading, refresh);

    this._status.className = 'jp-HpcMagics-jobs-status';
    this._list.className = 'jp-HpcMagics-jobs-list';
    this.node.append(header, this._status, this._list);
  }

  async refresh(): Promise<void> {
    if (this._loading) {
      return;
    }
    this._loading = true;
    try {
      this._render(await fetchJobs(), null);
    } catch (error) {
      this._render(null, String((error as Error).message ?? error));
    } finally {
      this._loading = false;
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
    window.clearInterval(this._timer);
    this._timer = window.setInterval(() => void this.refresh(), JOBS_REFRESH_MS);
  }

  protected onBeforeHide(msg: Message): void {
    window.clearInterval(this._timer);
    super.onBeforeHide(msg);
  }

  dispose(): void {
    window.clearInterval(this._timer);
    super.dispose();
  }

  private _render(list: IJobList | null, error: string | null): void {
    if (error !== null) {
      this._status.textContent = `Could not list jobs: ${error}`;
      this._status.dataset.kind = 'error';
      return;
    }
    const jobs = list?.jobs ?? [];
    this._status.dataset.kind = list?.error ? 'error' : 'ok';
    this._status.textContent =
      (list?.error ? `${list.error} · ` : '') +
      (jobs.length === 0
        ? 'No jobs in the queue.'
        : `${jobs.length} job${jobs.length === 1 ? '' : 's'}`) +
      (list?.jobs.some(job => job.final) ? ' (with those ended lately)' : '') +
      (list?.updated
        ? ` · updated ${new Date(list.updated * 1000).toLocaleTimeString()}`
        : '');

    this._list.replaceChildren();
    for (const job of jobs) {
      this._list.appendChild(this._jobRow(job));
    }
  }

  /** One job: `1234 name` over `RUNNING · 2m10s / 15m00s`, the button on the right. */
  private _jobRow(job: IJob): HTMLElement {
    const row = document.createElement('li');
    row.className = 'jp-HpcMagics-job';
    row.dataset.jobId = job.job_id;
    row.dataset.state = job.state;
    row.title = [
      `job ${job.job_id}: ${job.name}`,
      job.partition ? `partition ${job.partition}` : '',
      job.nodes ? `${job.nodes} node(s)` : '',
      job.reason && job.reason !== 'None' ? `reason: ${job.reason}` : '',
      job.folder ? `folder: ${job.folder}` : '',
      job.note ? `(${job.note})` : ''
    ]
      .filter(Boolean)
      .join('\n');

    const text = document.createElement('div');
    text.className = 'jp-HpcMagics-job-text';
    const first = document.createElement('div');
    first.className = 'jp-HpcMagics-job-title';
    const id = document.createElement('span');
    id.className = 'jp-HpcMagics-job-id';
    id.textContent = job.job_id;
    const name = document.createElement('span');
    name.className = 'jp-HpcMagics-job-name';
    name.textContent = job.is_server
      ? `${job.name} (this server)`
      : job.kind === 'kernel' && job.from_this_server
        ? `${job.name} (a kernel of this server)`
        : job.name;
    first.append(id, name);
    const second = document.createElement('div');
    second.className = 'jp-HpcMagics-job-detail';
    const state = document.createElement('span');
    state.textContent = job.state;
    state.className =
      `jp-HpcMagics-state jp-HpcMagics-state-${job.state.toLowerCase()} ` +
      `jp-HpcMagics-phase-${job.phase}`;
    const reason =
      job.state === 'PENDING' && job.reason && job.reason !== 'None'
        ? ` (${job.reason})`
        : '';
    const when =
      job.final && job.ended_at !== null
        ? `ended ${new Date(job.ended_at * 1000).toLocaleTimeString()}`
        : timeText(job);
    second.append(state, `${reason} · ${when}`);
    text.append(first, second);

    const button = document.createElement('button');
    button.className = 'jp-Button jp-mod-styled jp-mod-warn jp-HpcMagics-cancel';
    const folder = job.folder;
    if (job.final) {
      if (folder === null) {
        row.append(text);
        return row;
      }
      button.className = 'jp-Button jp-mod-styled jp-mod-reject jp-HpcMagics-cancel';
      button.textContent = 'Open folder';
      button.title = `Show ${folder} in the file browser`;
      button.addEventListener('click', () => this._openFolder(folder));
    } else if (job.is_server) {
      button.textContent = 'Stop server';
      button.title = 'This job runs this JupyterLab: save all and stop it';
      button.addEventListener('click', () => this._onStopServer());
    } else {
      button.textContent = 'Cancel';
      button.title = `Cancel job ${job.job_id} (scancel)`;
      button.addEventListener('click', () => void this._cancel(job, button));
    }
    row.append(text, button);
    return row;
  }

  private async _cancel(job: IJob, button: HTMLButtonElement): Promise<void> {
    const answer = await showDialog({
      title: `Cancel job ${job.job_id}?`,
      body: `“${job.name}” (${job.state}) is cancelled; its running work is lost.`,
      buttons: [
        Dialog.cancelButton({ label: 'Keep it' }),
        Dialog.warnButton({ label: 'Cancel job' })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    button.disabled = true;
    try {
      await cancelJob(job.job_id);
    } catch (error) {
      button.disabled = false;
      await showErrorMessage(
        `Job ${job.job_id} was not cancelled`,
        String((error as Error).message ?? error)
      );
      return;
    }
    await this.refresh();
  }

  private _status = document.createElement('div');
  private _list = document.createElement('ul');
  private _timer = 0;
  private _loading = false;
}
