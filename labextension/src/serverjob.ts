/**
 * The server's own Slurm job as the browser sees it.
 *
 * One GET /hpc-magics/server per minute (every 5 s while the answer is `pending`,
 * given before Slurm answered); in between, the countdown runs on the
 * browser's clock, corrected by the offset to the server's clock measured at
 * the last fetch.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { fetchServerInfo, HpcRequestError, IServerInfo } from './request';

export const RESYNC_MS = 60_000;
const TICK_MS = 1_000;
const DEADLINE_GRACE_S = 3;
const DEADLINE_RECHECK_MS = 15_000;
// the server answered before Slurm did (`pending`): ask again soon, not in a minute
const PENDING_RECHECK_MS = 5_000;

export type ServerJobPhase =
  | 'loading'
  | 'running'
  | 'unreachable'
  | 'no-extension'
  | 'stopped';

export class ServerJob {
  constructor() {
    void this.refresh();
    this._tickTimer = window.setInterval(() => this._tick(), TICK_MS);
    this._resyncTimer = window.setInterval(
      () => void this.refresh(),
      RESYNC_MS
    );
  }

  /** Emitted on every tick and after every fetch. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get info(): IServerInfo | null {
    return this._info;
  }

  get phase(): ServerJobPhase {
    return this._phase;
  }

  get lastError(): string | null {
    return this._lastError;
  }

  get inSlurmJob(): boolean {
    return this._info?.in_slurm_job === true && this._info.job_id !== null;
  }

  /** The server's clock now, in epoch seconds. */
  serverNow(): number {
    return Date.now() / 1000 + this._clockOffset;
  }

  secondsLeft(): number | null {
    const end = this._info?.end_time;
    if (end === null || end === undefined) {
      return null;
    }
    return Math.max(0, end - this.serverNow());
  }

  /** Node-hours used so far, advanced locally between fetches. */
  nodeHoursUsed(): number | null {
    const info = this._info;
    if (!info || info.node_hours_used === null) {
      return null;
    }
    const sinceFetch = Math.max(0, this.serverNow() - info.now);
    const used = info.node_hours_used + ((info.nodes ?? 1) * sinceFetch) / 3600;
    return info.node_hours_total !== null
      ? Math.min(used, info.node_hours_total)
      : used;
  }

  /** Seconds until the idle auto-stop, or null when idle stop is off. */
  secondsUntilIdleStop(): number | null {
    const at = this._info?.idle_stop_at;
    if (at === null || at === undefined) {
      return null;
    }
    return at - this.serverNow();
  }

  async refresh(): Promise<void> {
    if (this._phase === 'stopped' || this._disposed) {
      return;
    }
    this._lastFetchMs = Date.now();
    try {
      const info = await fetchServerInfo();
      if (this._isStopped()) {
        return;
      }
      this._clockOffset = info.now - Date.now() / 1000;
      this._info = info;
      this._phase = 'running';
      this._lastError = null;
    } catch (error) {
      if (this._isStopped()) {
        return;
      }
      // 404: the server runs without the hpc_magics server extension.
      this._phase =
        error instanceof HpcRequestError && error.status === 404
          ? 'no-extension'
          : 'unreachable';
      this._lastError = String((error as Error).message ?? error);
    }
    this._changed.emit();
  }

  /** Update the idle deadline after a keep-alive without waiting for the next fetch. */
  setIdleStopAt(idleStopAt: number | null): void {
    if (this._info) {
      this._info = { ...this._info, idle_stop_at: idleStopAt };
      this._changed.emit();
    }
  }

  /** The server was stopped from this tab: stop polling for good. */
  markStopped(): void {
    this._phase = 'stopped';
    this._stopTimers();
    this._changed.emit();
  }

  dispose(): void {
    this._disposed = true;
    this._stopTimers();
    Signal.clearData(this);
  }

  /** Read through a method: the phase can change while a fetch is awaited. */
  private _isStopped(): boolean {
    return this._phase === 'stopped';
  }

  private _tick(): void {
    if (!this._info) {
      return;
    }
    // Past the walltime or the idle deadline the server is likely gone: find out
    // now rather than at the next minute's fetch (at most every 15 s).
    const sinceFetchMs = Date.now() - this._lastFetchMs;
    if (
      this._phase === 'running' &&
      ((this._deadlinePassed() && sinceFetchMs > DEADLINE_RECHECK_MS) ||
        (this._info.pending === true && sinceFetchMs > PENDING_RECHECK_MS))
    ) {
      void this.refresh();
    }
    this._changed.emit();
  }

  private _deadlinePassed(): boolean {
    const idle = this.secondsUntilIdleStop();
    const end = this._info?.end_time ?? null;
    return (
      (idle !== null && idle < -DEADLINE_GRACE_S) ||
      (end !== null && this.serverNow() > end + DEADLINE_GRACE_S)
    );
  }

  private _stopTimers(): void {
    window.clearInterval(this._tickTimer);
    window.clearInterval(this._resyncTimer);
  }

  private _changed = new Signal<this, void>(this);
  private _info: IServerInfo | null = null;
  private _phase: ServerJobPhase = 'loading';
  private _lastError: string | null = null;
  private _clockOffset = 0;
  private _lastFetchMs = 0;
  private _disposed = false;
  private _tickTimer: number;
  private _resyncTimer: number;
}
