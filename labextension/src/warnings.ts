/**
 * Notifications before the server ends: walltime (once per threshold, e.g. 15
 * and 5 minutes before) and idle auto-stop (with a "Keep working" action).
 */
import { Notification } from '@jupyterlab/apputils';
import { CommandRegistry } from '@lumino/commands';

import { formatClock, formatDuration } from './format';
import { KernelJobs } from './kerneljobs';
import { keepAlive } from './request';
import { ServerJob } from './serverjob';
import { SAVE_ALL_COMMAND } from './stop';

export const STOP_COMMAND = 'hpc-magics:stop-server';
const DEFAULT_IDLE_WARNING_MINUTES = 5;

/** Thresholds already announced survive a page reload of the same job. */
function warnedKey(jobId: string, minutes: number): string {
  return `hpc-magics:walltime-warned:${jobId}:${minutes}`;
}

export class WalltimeWarnings {
  constructor(
    private readonly _job: ServerJob,
    private readonly _commands: CommandRegistry
  ) {
    this._job.changed.connect(this._check, this);
  }

  dispose(): void {
    this._job.changed.disconnect(this._check, this);
  }

  private _check(): void {
    const job = this._job;
    const info = job.info;
    const left = job.secondsLeft();
    if (!info || !job.inSlurmJob || job.phase === 'stopped' || left === null) {
      return;
    }
    const jobId = info.job_id as string;
    const due = (info.warn_minutes ?? []).filter(
      minutes => left <= minutes * 60 && !this._warned(jobId, minutes)
    );
    if (due.length === 0) {
      return;
    }
    // Several thresholds at once (a job opened late): announce only the most urgent.
    for (const minutes of due) {
      this._markWarned(jobId, minutes);
    }
    if (left <= 0 || info.end_time === null) {
      return;
    }
    const minutesLeft = Math.max(1, Math.ceil(left / 60));
    const message =
      `Slurm job ${jobId} reaches its walltime in ${minutesLeft} minute` +
      `${minutesLeft === 1 ? '' : 's'} (at ${formatClock(info.end_time)}): ` +
      'the server stops then. Save your work.';
    if (this._lastId) {
      Notification.dismiss(this._lastId);
    }
    this._lastId = Notification.warning(message, {
      autoClose: false,
      actions: [
        {
          label: 'Save all',
          caption: 'Save every open document now',
          callback: () => void this._commands.execute(SAVE_ALL_COMMAND)
        },
        {
          label: 'Save all and stop…',
          caption: 'Stop the server now and give the node back',
          displayType: 'warn',
          callback: () => void this._commands.execute(STOP_COMMAND)
        }
      ]
    });
  }

  private _warned(jobId: string, minutes: number): boolean {
    const key = warnedKey(jobId, minutes);
    if (this._inMemory.has(key)) {
      return true;
    }
    try {
      return window.sessionStorage.getItem(key) !== null;
    } catch {
      return false;
    }
  }

  private _markWarned(jobId: string, minutes: number): void {
    const key = warnedKey(jobId, minutes);
    this._inMemory.add(key);
    try {
      window.sessionStorage.setItem(key, String(Date.now()));
    } catch {
      // Storage can be disabled; the in-memory set still prevents repeats.
    }
  }

  private _inMemory = new Set<string>();
  private _lastId: string | null = null;
}

export class IdleStopWarning {
  constructor(
    private readonly _job: ServerJob,
    private readonly _kernels: KernelJobs | null = null
  ) {
    this._job.changed.connect(this._check, this);
  }

  dispose(): void {
    this._job.changed.disconnect(this._check, this);
  }

  /** Seconds before the idle stop at which to warn: the server's setting, at most half the idle period. */
  private _warningWindow(): number {
    const info = this._job.info;
    const idleSeconds = (info?.idle_stop_minutes ?? 0) * 60;
    const configured = (info?.idle_warning_minutes ?? DEFAULT_IDLE_WARNING_MINUTES) * 60;
    return configured > 0 && configured < idleSeconds ? configured : idleSeconds / 2;
  }

  private _dismiss(): void {
    if (this._notificationId) {
      Notification.dismiss(this._notificationId);
      this._notificationId = null;
    }
  }

  private _check(): void {
    const job = this._job;
    const until = job.secondsUntilIdleStop();
    if (job.phase === 'stopped' || until === null) {
      this._dismiss();
      return;
    }
    if (until > this._warningWindow()) {
      this._dismiss();
      return;
    }
    if (this._notificationId || this._confirming) {
      return;
    }
    // Activity since the last fetch may have pushed the deadline back: ask first.
    this._confirming = true;
    void job.refresh().then(() => {
      this._confirming = false;
      const confirmed = job.secondsUntilIdleStop();
      if (
        confirmed === null ||
        confirmed > this._warningWindow() ||
        this._notificationId ||
        job.phase !== 'running'
      ) {
        return;
      }
      this._show(confirmed);
    });
  }

  private _show(secondsLeft: number): void {
    const info = this._job.info;
    const at = info?.idle_stop_at ?? null;
    const kernels = (this._kernels?.jobs ?? []).map(
      k => `${k.kind} ${k.name} (job ${k.job_id})`
    );
    const what =
      (this._job.inSlurmJob
        ? `the server stops and Slurm job ${info?.job_id} is cancelled`
        : 'the server stops') +
      (kernels.length > 0
        ? `, and the kernel jobs end too: ${kernels.join(', ')},`
        : '');
    const message =
      `No activity for a while: ${what} in ${formatDuration(secondsLeft)}` +
      (at !== null ? ` (at ${formatClock(at)})` : '') +
      '.';
    this._notificationId = Notification.warning(message, {
      autoClose: false,
      actions: [
        {
          label: 'Keep working',
          caption: 'Reset the idle timer',
          displayType: 'accent',
          callback: () => {
            this._notificationId = null;
            void keepAlive()
              .then(answer => this._job.setIdleStopAt(answer.idle_stop_at))
              .catch(error =>
                Notification.error(
                  `Keep working failed: ${String((error as Error).message ?? error)}`,
                  { autoClose: 10_000 }
                )
              );
          }
        }
      ]
    });
  }

  private _notificationId: string | null = null;
  private _confirming = false;
}
