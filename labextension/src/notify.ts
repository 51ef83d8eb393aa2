/**
 * A notification when one of the user's Slurm jobs ends.
 *
 * The server watches the jobs (one scheduler query per interval for the user,
 * however many tabs are open); each tab only polls its list of end events
 * (`GET /hpc-magics/jobs/events?since=N`, no scheduler call) and shows each
 * new one with a button that opens the job's folder.
 */
import { Notification } from '@jupyterlab/apputils';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { CommandRegistry } from '@lumino/commands';
import { ISignal, Signal } from '@lumino/signaling';

import { fetchJobEvents, IJobEvent } from './request';

const GO_TO_PATH = 'filebrowser:go-to-path';
const MIN_POLL_MS = 1_000;
const MAX_POLL_MS = 5_000;
const ERROR_POLL_MS = 30_000;
const SUCCESS_AUTO_CLOSE_MS = 15_000;
// More ends than this at once (many separate jobs finishing together): one summary.
export const MAX_SINGLE_NOTIFICATIONS = 8;

/** Show a job folder: JupyterLab's file browser, else Notebook 7's tree page. */
export function openJobFolder(commands: CommandRegistry, folder: string): void {
  if (commands.hasCommand(GO_TO_PATH)) {
    void commands.execute(GO_TO_PATH, { path: folder });
    return;
  }
  const url = URLExt.join(
    PageConfig.getBaseUrl(),
    'tree',
    URLExt.encodeParts(folder)
  );
  window.open(url, '_blank');
}

/**
 * Where `path` lies in the server's root, as the file browser names it, or null
 * outside it. `path` comes as the kernel wrote it: the home as `~`, as the
 * server writes its root in the page (`serverRoot`).
 */
export function inServerRoot(path: string): string | null {
  const root = PageConfig.getOption('serverRoot').replace(/\/+$/, '');
  if (!root || path === root) {
    return root ? '' : null;
  }
  return path.startsWith(root + '/') ? path.slice(root.length + 1) : null;
}

/**
 * The job widget's `log · folder` links (hpc_magics/widgets/job_view.py): the
 * log opens as a document, the folder in the file browser; outside the
 * server's root, a notification names the path.
 */
export function openWidgetLink(
  commands: CommandRegistry,
  kind: string | null,
  path: string
): void {
  const inRoot = inServerRoot(path);
  if (inRoot === null) {
    Notification.info(
      `The job's ${kind ?? 'file'} is outside this server's root: ${path}`,
      { autoClose: 10_000 }
    );
  } else if (kind === 'folder') {
    openJobFolder(commands, inRoot);
  } else {
    void commands.execute('docmanager:open', { path: inRoot });
  }
}

/** `Slurm job 1234 “train” ended: COMPLETED`. */
export function endMessage(event: IJobEvent): string {
  const name = event.name ? ` “${event.name}”` : '';
  const how =
    event.phase === 'ended'
      ? 'left the queue (Slurm cannot say how it ended)'
      : `ended: ${event.state}`;
  return `Slurm job ${event.job_id}${name} ${how}`;
}

/** `12 Slurm jobs ended: 10 COMPLETED, 2 FAILED`. */
export function summaryMessage(events: IJobEvent[]): string {
  const counts = new Map<string, number>();
  for (const event of events) {
    counts.set(event.state, (counts.get(event.state) ?? 0) + 1);
  }
  const parts = [...counts.entries()].map(([state, n]) => `${n} ${state}`);
  return `${events.length} Slurm jobs ended: ${parts.join(', ')}`;
}

export class JobEndNotifier {
  constructor(
    private readonly _commands: CommandRegistry,
    private readonly _openJobs: () => void
  ) {}

  /** Emitted with the new end events, right after their notifications. */
  get ended(): ISignal<this, IJobEvent[]> {
    return this._ended;
  }

  start(): void {
    if (!this._timer) {
      void this._poll();
    }
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    this._disposed = true;
  }

  private async _poll(): Promise<void> {
    let delay = MAX_POLL_MS;
    try {
      const answer = await fetchJobEvents(this._since);
      delay = Math.min(
        MAX_POLL_MS,
        Math.max(MIN_POLL_MS, (answer.interval_s * 1000) / 3)
      );
      if (this._serverId !== null && answer.server_id !== this._serverId) {
        // The server restarted: its numbering started again; old events are gone.
        this._since = answer.last;
      } else {
        const fresh = answer.events.filter(e => e.seq > (this._since ?? -1));
        this._since = answer.last;
        if (fresh.length > MAX_SINGLE_NOTIFICATIONS) {
          this._showSummary(fresh);
        } else {
          fresh.forEach(event => this._show(event));
        }
        if (fresh.length > 0) {
          this._ended.emit(fresh);
        }
      }
      this._serverId = answer.server_id;
    } catch {
      delay = ERROR_POLL_MS; // server stopped or unreachable: ask rarely
    }
    if (!this._disposed) {
      this._timer = window.setTimeout(() => void this._poll(), delay);
    }
  }

  private _showSummary(events: IJobEvent[]): void {
    const actions: Notification.IAction[] = [
      {
        label: 'My Slurm jobs',
        caption: 'The jobs panel lists them, with their folders',
        callback: () => this._openJobs()
      }
    ];
    const message = summaryMessage(events);
    if (events.some(e => e.phase === 'failed' && e.state !== 'CANCELLED')) {
      Notification.error(message, { autoClose: false, actions });
    } else if (events.some(e => e.phase !== 'done')) {
      Notification.warning(message, { autoClose: false, actions });
    } else {
      Notification.success(message, { autoClose: SUCCESS_AUTO_CLOSE_MS, actions });
    }
  }

  private _show(event: IJobEvent): void {
    const actions: Notification.IAction[] = [];
    const folder = event.folder;
    if (folder !== null) {
      actions.push({
        label: 'Open folder',
        caption: `Show ${folder} in the file browser`,
        callback: () => openJobFolder(this._commands, folder)
      });
    }
    const message = endMessage(event);
    if (event.phase === 'done') {
      Notification.success(message, {
        autoClose: SUCCESS_AUTO_CLOSE_MS,
        actions
      });
    } else if (event.phase === 'ended' || event.state === 'CANCELLED') {
      Notification.warning(message, { autoClose: false, actions });
    } else {
      Notification.error(message, { autoClose: false, actions });
    }
  }

  private _since: number | null = null;
  private _serverId: string | null = null;
  private _timer = 0;
  private _disposed = false;
  private _ended = new Signal<this, IJobEvent[]>(this);
}
