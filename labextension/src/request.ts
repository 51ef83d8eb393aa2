/**
 * Every call to the hpc_magics server extension goes through this module.
 *
 * The routes and payloads are the contract in the server's handlers
 * (`hpc_magics/server/`); `ServerConnection.makeRequest` adds the token and
 * the XSRF header, so POSTs pass the server's authentication.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** GET /hpc-magics/server: the server's own Slurm job. */
export interface IServerInfo {
  in_slurm_job: boolean;
  job_id: string | null;
  job_name: string | null;
  partition: string | null;
  nodes: number | null;
  start_time: number | null;
  end_time: number | null;
  seconds_left: number | null;
  node_hours_used: number | null;
  node_hours_total: number | null;
  now: number;
  idle_stop_minutes: number | null;
  idle_stop_at: number | null;
  /** How long before an idle stop the front end offers "keep working". */
  idle_warning_minutes?: number | null;
  warn_minutes: number[];
  /** Answered before the scheduler: only what the job's environment said (no end yet). */
  pending?: boolean;
  /** What is left of the account's allocation, where Slurm knows it (asked rarely). */
  allocation?: IAllocation | null;
}

/** The account's allocation, as `sshare` or the site's balance command tells it. */
export interface IAllocation {
  account: string | null;
  /** The status bar's words, e.g. `hpcproj: 812.0 billing-h left`. */
  text: string;
  title: string;
  /** Below the server's warning share of the limit. */
  low: boolean;
  left_h: number | null;
  limit_h: number | null;
}

/** A job's coarse phase, as the server's watcher decided it. */
export type JobPhase = 'pending' | 'running' | 'done' | 'failed' | 'ended';

/** One row of GET /hpc-magics/jobs: live jobs and those that ended recently. */
export interface IJob {
  job_id: string;
  name: string;
  state: string;
  phase: JobPhase;
  final: boolean;
  /** Where the state came from (squeue, sacct, results, ...) and a remark on it. */
  source: string;
  note: string;
  partition: string | null;
  nodes: number | null;
  elapsed_s: number | null;
  time_limit_s: number | null;
  end_time: number | null;
  reason: string | null;
  is_server: boolean;
  /** The job folder relative to the server's root (for the file browser), or null. */
  folder: string | null;
  /** Submitted from a kernel of this server. */
  from_this_server: boolean;
  ended_at: number | null;
  /** `kernel` for a Slurm kernel's own job; `cell`, `notebook`, ... */
  kind?: string;
}

/** One of this server's Slurm kernel jobs (GET /hpc-magics/kernels). */
export interface IKernelJob {
  job_id: string;
  /** `kernel`. */
  kind: string;
  /** The kernelspec's name. */
  name: string;
  state: string;
  phase: JobPhase;
  /** Slurm's pending reason code and its plain words, while it pends. */
  reason: string;
  reason_text: string;
  /** Slurm's expected start while it pends (epoch seconds), when it has one. */
  expected_start: number | null;
  end_time: number | null;
  seconds_left: number | null;
  elapsed_s: number | null;
  /** What it has cost so far under the profile's billing rule, e.g. `0.0123 core-h`. */
  cost: string | null;
  node_list: string;
  /** A kernel in the user's own allocation (`--jobid`): a stop ends only its step. */
  own_allocation?: boolean;
}

export interface IKernelJobList {
  kernels: IKernelJob[];
  updated: number | null;
  error: string | null;
  now: number;
}

export interface IJobList {
  jobs: IJob[];
  updated: number | null;
  server_job_id: string | null;
  server_id: string;
  /** Why the last scheduler query failed; the list is then the last good one. */
  error?: string | null;
}

/** A failed call, with the server's own message when it sent one. */
export class HpcRequestError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
  }
}

async function requestJson<T>(
  path: string,
  init: RequestInit = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'hpc-magics', path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new HpcRequestError(`server unreachable (${String(error)})`, 0);
  }
  const text = await response.text();
  let data: any = null;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const reason =
      (data && (data.message || data.reason || data.error)) ||
      response.statusText;
    throw new HpcRequestError(
      `${init.method ?? 'GET'} ${path}: ${response.status} ${reason}`,
      response.status
    );
  }
  return data as T;
}

export function fetchServerInfo(): Promise<IServerInfo> {
  return requestJson<IServerInfo>('server');
}

export function stopServer(): Promise<{
  stopping: boolean;
  job_id: string | null;
  /** The kernel jobs that end with the server. */
  kernel_jobs?: string[];
  /** The user's own allocations whose kernels' steps end; they keep running. */
  allocations_left_running?: string[];
}> {
  return requestJson('server/stop', { method: 'POST', body: '{}' });
}

export function keepAlive(): Promise<{ idle_stop_at: number | null }> {
  return requestJson('server/keep-alive', { method: 'POST', body: '{}' });
}

export function fetchJobs(): Promise<IJobList> {
  return requestJson<IJobList>('jobs');
}

export function fetchKernelJobs(): Promise<IKernelJobList> {
  return requestJson<IKernelJobList>('kernels');
}

/** One job that ended while the server watched it. */
export interface IJobEvent {
  seq: number;
  job_id: string;
  name: string;
  state: string;
  phase: JobPhase;
  folder: string | null;
  from_this_server: boolean;
  at: number;
}

export interface IJobEvents {
  events: IJobEvent[];
  /** Ask with `since=last` next time. */
  last: number;
  /** A different id: the server restarted, its numbering too. */
  server_id: string;
  interval_s: number;
}

/** GET /hpc-magics/jobs/events: the ends after `since` (none: just where the list is). */
export function fetchJobEvents(since: number | null): Promise<IJobEvents> {
  return requestJson<IJobEvents>(
    since === null ? 'jobs/events' : `jobs/events?since=${since}`
  );
}

export function cancelJob(jobId: string): Promise<{ cancelled: string }> {
  return requestJson(`jobs/${encodeURIComponent(jobId)}/cancel`, {
    method: 'POST',
    body: '{}'
  });
}
