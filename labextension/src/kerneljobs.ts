/**
 * This server's Slurm kernel jobs as the browser sees them: GET /hpc-magics/kernels
 * every few seconds while the tab is visible (the server answers from its own
 * cycle: one squeue per interval for the user, whatever the number of tabs or
 * kernels), and at once when a kernel starts or ends. Between fetches the time
 * left counts down on the browser's clock, corrected to the server's.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { formatClock, formatDuration } from './format';
import { fetchKernelJobs, IKernelJob } from './request';

export const KERNELS_POLL_MS = 5_000;
const TICK_MS = 1_000;

/** `kernel demo: job 123 pending (Resources), expected start 14:05` or
 * `kernel demo: job 123 · 4m10s left · 0.0123 core-h`. */
export function kernelJobText(job: IKernelJob, secondsLeft: number | null): string {
  const head = `${job.kind} ${job.name}: job ${job.job_id}`;
  if (job.phase === 'pending') {
    const reason = job.reason ? ` (${job.reason})` : '';
    const start =
      job.expected_start !== null
        ? `, expected start ${formatClock(job.expected_start)}`
        : '';
    return `${head} pending${reason}${start}`;
  }
  if (job.phase !== 'running') {
    return `${head} ${job.state}`;
  }
  const parts = [head];
  if (secondsLeft !== null) {
    parts.push(secondsLeft > 0 ? `${formatDuration(secondsLeft)} left` : 'time is up');
  }
  if (job.cost) {
    parts.push(job.cost);
  }
  if (job.own_allocation) {
    parts.push('your allocation');
  }
  return parts.join(' · ');
}

export class KernelJobs {
  constructor() {
    void this.refresh();
    this._pollTimer = window.setInterval(() => {
      if (!document.hidden) {
        void this.refresh();
      }
    }, KERNELS_POLL_MS);
    this._tickTimer = window.setInterval(() => this._changed.emit(), TICK_MS);
  }

  /** Emitted every second and after every fetch. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get jobs(): IKernelJob[] {
    return this._jobs;
  }

  get lastError(): string | null {
    return this._lastError;
  }

  /** Seconds left of a running job's time limit, counted down since the fetch. */
  secondsLeft(job: IKernelJob): number | null {
    if (job.end_time !== null) {
      return Math.max(0, job.end_time - (Date.now() / 1000 + this._clockOffset));
    }
    return job.seconds_left;
  }

  text(job: IKernelJob): string {
    return kernelJobText(job, this.secondsLeft(job));
  }

  async refresh(): Promise<void> {
    if (this._stopped || this._loading) {
      return;
    }
    this._loading = true;
    try {
      const list = await fetchKernelJobs();
      this._clockOffset = list.now - Date.now() / 1000;
      this._jobs = list.kernels;
      this._lastError = list.error;
    } catch (error) {
      this._lastError = String((error as Error).message ?? error);
    } finally {
      this._loading = false;
    }
    this._changed.emit();
  }

  /** The server stopped: no more polling. */
  stop(): void {
    this._stopped = true;
    window.clearInterval(this._pollTimer);
    window.clearInterval(this._tickTimer);
  }

  dispose(): void {
    this.stop();
    Signal.clearData(this);
  }

  private _changed = new Signal<this, void>(this);
  private _jobs: IKernelJob[] = [];
  private _lastError: string | null = null;
  private _clockOffset = 0;
  private _loading = false;
  private _stopped = false;
  private _pollTimer: number;
  private _tickTimer: number;
}
