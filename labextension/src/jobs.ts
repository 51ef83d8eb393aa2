/**
 * The jobs panel: the user's Slurm jobs from GET /hpc-magics/jobs, a Cancel
 * button per job, refreshed every 30 s while the panel is visible.
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
  constructor(private readonly _onStopServer: () => void) {
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
    this._table.className = 'jp-HpcMagics-jobs-table';
    this.node.append(header, this._status, this._table);
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
    const updated = list ? new Date(list.updated * 1000) : new Date();
    this._status.dataset.kind = 'ok';
    this._status.textContent =
      (jobs.length === 0
        ? 'No jobs in the queue.'
        : `${jobs.length} job${jobs.length === 1 ? '' : 's'}`) +
      ` · updated ${updated.toLocaleTimeString()}`;

    this._table.replaceChildren();
    if (jobs.length === 0) {
      return;
    }
    const head = this._table.createTHead().insertRow();
    for (const label of ['Job', 'Name', 'State', 'Time', '']) {
      const th = document.createElement('th');
      th.textContent = label;
      head.appendChild(th);
    }
    const body = this._table.createTBody();
    for (const job of jobs) {
      const row = body.insertRow();
      row.dataset.jobId = job.job_id;
      row.insertCell().textContent = job.job_id;
      const name = row.insertCell();
      name.textContent = job.name;
      name.title = [job.name, job.partition, job.nodes ? `${job.nodes} node(s)` : '']
        .filter(Boolean)
        .join(' · ');
      const state = row.insertCell();
      state.textContent = job.state;
      state.className = `jp-HpcMagics-state jp-HpcMagics-state-${job.state.toLowerCase()}`;
      if (job.reason && job.reason !== 'None') {
        state.title = job.reason;
      }
      row.insertCell().textContent = timeText(job);
      const action = row.insertCell();
      const button = document.createElement('button');
      button.className = 'jp-Button jp-mod-styled jp-mod-warn jp-HpcMagics-cancel';
      if (job.is_server) {
        button.textContent = 'Stop server';
        button.title = 'This job runs this JupyterLab: save all and stop it';
        button.addEventListener('click', () => this._onStopServer());
      } else {
        button.textContent = 'Cancel';
        button.title = `scancel ${job.job_id}`;
        button.addEventListener('click', () => void this._cancel(job, button));
      }
      action.appendChild(button);
    }
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
  private _table = document.createElement('table');
  private _timer = 0;
  private _loading = false;
}
