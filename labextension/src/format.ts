/**
 * Pure text for the status bar, the dialogs and the jobs panel.
 */

function pad2(value: number): string {
  return value < 10 ? `0${value}` : `${value}`;
}

/**
 * A duration the way people read a countdown: `1d03h`, `2h41m`, `12m05s`, `42s`.
 */
export function formatDuration(totalSeconds: number): string {
  const seconds = Math.max(0, Math.floor(totalSeconds));
  const days = Math.floor(seconds / 86400);
  const hours = Math.floor((seconds % 86400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  if (days > 0) {
    return `${days}d${pad2(hours)}h`;
  }
  if (hours > 0) {
    return `${hours}h${pad2(minutes)}m`;
  }
  if (minutes > 0) {
    return `${minutes}m${pad2(rest)}s`;
  }
  return `${rest}s`;
}

/** Node-hours with one decimal, two below 0.1 so a fresh job does not read 0.0. */
export function formatNodeHours(nodeHours: number): string {
  const digits = nodeHours > 0 && nodeHours < 0.1 ? 2 : 1;
  return `${nodeHours.toFixed(digits)} node-h`;
}

/** `job 1234 · 2h41m left · 3.2 node-h` */
export function statusText(
  jobId: string,
  secondsLeft: number | null,
  nodeHoursUsed: number | null
): string {
  const parts = [`job ${jobId}`];
  if (secondsLeft !== null) {
    parts.push(
      secondsLeft > 0 ? `${formatDuration(secondsLeft)} left` : 'time is up'
    );
  }
  if (nodeHoursUsed !== null) {
    parts.push(formatNodeHours(nodeHoursUsed));
  }
  return parts.join(' · ');
}

/** Local time of an epoch in seconds, e.g. `14:05` (with the date when not today). */
export function formatClock(epochSeconds: number): string {
  const date = new Date(epochSeconds * 1000);
  const time = date.toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit'
  });
  const today = new Date();
  if (date.toDateString() === today.toDateString()) {
    return time;
  }
  return `${date.toLocaleDateString()} ${time}`;
}
