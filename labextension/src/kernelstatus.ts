/**
 * Beside the server's own job in the status bar: its Slurm kernel jobs (one
 * entry each: pending with Slurm's reason and expected start, or time left and
 * cost so far), the account's allocation, and a notification while a kernel's
 * job pends, so a kernel that waits in the queue never looks like a silent spinner.
 */
import { Notification } from '@jupyterlab/apputils';

import { KernelJobs } from './kerneljobs';
import { LiveWidget, makeClickable, urgency } from './live';
import { IKernelJob } from './request';
import { ServerJob } from './serverjob';

const STARTED_NOTICE_MS = 6_000;

/** One entry per kernel job; a click opens the jobs panel. */
export class KernelJobsStatus extends LiveWidget<KernelJobs> {
  constructor(kernels: KernelJobs, onClick: () => void) {
    super(kernels, 'jp-HpcMagics-kernels', { node: document.createElement('div') });
    makeClickable(this.node, onClick);
  }

  protected render(): void {
    const kernels = this.source;
    const jobs = kernels.jobs;
    this.node.style.display = jobs.length === 0 ? 'none' : '';
    const ids = jobs.map(job => job.job_id).join(' ');
    if (this.node.dataset.jobIds !== ids) {
      this.node.dataset.jobIds = ids;
      this.node.replaceChildren(
        ...jobs.map(job => {
          const item = document.createElement('span');
          item.className = 'jp-HpcMagics-kernel';
          item.dataset.jobId = job.job_id;
          return item;
        })
      );
    }
    jobs.forEach((job, index) => {
      const item = this.node.children[index] as HTMLElement;
      const text = kernels.text(job);
      if (item.textContent !== text) {
        item.textContent = text;
      }
      item.dataset.phase = job.phase;
      item.dataset.kind =
        job.phase === 'pending' ? 'pending' : urgency(kernels.secondsLeft(job));
      item.title =
        job.phase === 'pending'
          ? `Slurm: ${job.reason_text || 'waiting to be scheduled'}. The notebook connects when the job starts.`
          : `Your ${job.kind} runs as Slurm job ${job.job_id}` +
            (job.node_list ? ` on ${job.node_list}` : '') +
            '. Shutting the kernel down cancels the job.';
    });
  }
}

/** What is left of the account's allocation (from GET /hpc-magics/server, asked rarely). */
export class AllocationStatus extends LiveWidget<ServerJob> {
  constructor(job: ServerJob) {
    super(job, 'jp-HpcMagics-allocation', { node: document.createElement('div') });
  }

  protected render(): void {
    const allocation = this.source.info?.allocation ?? null;
    this.node.style.display = allocation ? '' : 'none';
    if (!allocation) {
      return;
    }
    const text = `allocation ${allocation.text}`;
    if (this.node.textContent !== text) {
      this.node.textContent = text;
    }
    this.node.title = allocation.low
      ? `Running low: ${allocation.title}`
      : allocation.title;
    this.node.dataset.kind = allocation.low ? 'warn' : 'ok';
  }
}

/** One notification per pending kernel job, updated as Slurm's reason changes. */
export class KernelPendingNotices {
  constructor(private readonly _kernels: KernelJobs) {
    this._kernels.changed.connect(this._check, this);
  }

  dispose(): void {
    this._kernels.changed.disconnect(this._check, this);
  }

  private _check(): void {
    const seen = new Map<string, IKernelJob>(
      this._kernels.jobs.map(job => [job.job_id, job])
    );
    for (const job of seen.values()) {
      if (job.phase !== 'pending') {
        continue;
      }
      const message = this._kernels.text(job);
      const shown = this._shown.get(job.job_id);
      if (!shown) {
        const id = Notification.info(message, { autoClose: false });
        this._shown.set(job.job_id, { id, message });
      } else if (shown.message !== message) {
        Notification.update({ id: shown.id, message, autoClose: false });
        shown.message = message;
      }
    }
    for (const [jobId, shown] of [...this._shown]) {
      const job = seen.get(jobId);
      if (job && job.phase === 'pending') {
        continue;
      }
      this._shown.delete(jobId);
      if (job && job.phase === 'running') {
        Notification.update({
          id: shown.id,
          message: `${job.kind} ${job.name}: job ${jobId} started${job.node_list ? ` on ${job.node_list}` : ''}`,
          type: 'success',
          autoClose: STARTED_NOTICE_MS
        });
      } else {
        Notification.dismiss(shown.id);
      }
    }
  }

  private _shown = new Map<string, { id: string; message: string }>();
}
