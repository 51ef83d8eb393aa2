/**
 * The status-bar item: `job 1234 · 2h41m left · 3.2 node-h`, or a quiet
 * `no Slurm job` when the server does not run inside one.
 */
import { Widget } from '@lumino/widgets';

import { statusText } from './format';
import { ServerJob } from './serverjob';

const WARN_SECONDS = 15 * 60;
const URGENT_SECONDS = 5 * 60;

export class ServerJobStatus extends Widget {
  constructor(
    private readonly _job: ServerJob,
    private readonly _onClick: () => void
  ) {
    super({ node: document.createElement('div') });
    this.addClass('jp-HpcMagics-status');
    this.node.setAttribute('role', 'button');
    this.node.tabIndex = 0;
    this.node.addEventListener('click', () => this._onClick());
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        this._onClick();
      }
    });
    this._job.changed.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    this._job.changed.disconnect(this._render, this);
    super.dispose();
  }

  private _render(): void {
    const job = this._job;
    const info = job.info;
    let text: string;
    let title: string;
    let kind: 'quiet' | 'ok' | 'warn' | 'urgent';
    if (job.phase === 'stopped') {
      text = 'server stopped';
      title = 'This server was stopped.';
      kind = 'quiet';
    } else if (job.phase === 'no-extension') {
      text = 'Slurm job: n/a';
      title =
        'The hpc_magics server extension is not enabled on this server ' +
        '(jupyter server extension enable hpc_magics).';
      kind = 'quiet';
    } else if (job.phase === 'unreachable') {
      text = 'server not answering';
      title = `The server did not answer: ${job.lastError}`;
      kind = 'quiet';
    } else if (!info) {
      text = 'Slurm job…';
      title = job.lastError ?? 'Asking the server about its Slurm job';
      kind = 'quiet';
    } else if (!job.inSlurmJob) {
      text = 'no Slurm job';
      title =
        'This server does not run inside a Slurm job. Click for your jobs.';
      kind = 'quiet';
    } else {
      const left = job.secondsLeft();
      text = statusText(info.job_id as string, left, job.nodeHoursUsed());
      title = 'Your server runs as this Slurm job. Click for details and stop.';
      kind =
        left === null
          ? 'ok'
          : left <= URGENT_SECONDS
            ? 'urgent'
            : left <= WARN_SECONDS
              ? 'warn'
              : 'ok';
    }
    if (this.node.textContent !== text) {
      this.node.textContent = text;
    }
    this.node.title = title;
    this.node.dataset.kind = kind;
  }
}
