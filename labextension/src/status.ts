/**
 * The status-bar item: `job 1234 · 2h41m left · 3.2 node-h`, or a quiet
 * `no Slurm job` when the server does not run inside one.
 */
import { statusText } from './format';
import { LiveWidget, makeClickable, urgency } from './live';
import { ServerJob } from './serverjob';

export class ServerJobStatus extends LiveWidget<ServerJob> {
  constructor(job: ServerJob, onClick: () => void) {
    super(job, 'jp-HpcMagics-status', { node: document.createElement('div') });
    makeClickable(this.node, onClick);
  }

  protected render(): void {
    const job = this.source;
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
      kind = urgency(left);
    }
    if (this.node.textContent !== text) {
      this.node.textContent = text;
    }
    this.node.title = title;
    this.node.dataset.kind = kind;
  }
}
