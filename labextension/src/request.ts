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
}

/** One row of GET /hpc-magics/jobs. */
export interface IJob {
  job_id: string;
  name: string;
  state: string;
  partition: string | null;
  nodes: number | null;
  elapsed_s: number | null;
  time_limit_s: number | null;
  end_time: number | null;
  reason: string | null;
  is_server: boolean;
}

export interface IJobList {
  jobs: IJob[];
  updated: number;
  server_job_id: string | null;
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
}> {
  return requestJson('server/stop', { method: 'POST', body: '{}' });
}

export function keepAlive(): Promise<{ idle_stop_at: number | null }> {
  return requestJson('server/keep-alive', { method: 'POST', body: '{}' });
}

export function fetchJobs(): Promise<IJobList> {
  return requestJson<IJobList>('jobs');
}

export function cancelJob(jobId: string): Promise<{ cancelled: string }> {
  return requestJson(`jobs/${encodeURIComponent(jobId)}/cancel`, {
    method: 'POST',
    body: '{}'
  });
}
