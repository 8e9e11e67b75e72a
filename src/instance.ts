import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * This instance's name, in /metrics and as a lease holder: `host:pid:random`. The random part keeps
 * apart two apps in one process (tests) and a process that reuses a dead one's id.
 */
export function newInstanceId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * True when `instanceId` names a process on this machine that no longer runs (killed, crashed): its
 * lease need not be waited out. Anything else (another machine, a live process) counts as running.
 */
export function isGoneFromThisMachine(instanceId: string): boolean {
  const [host, pid] = instanceId.split(':');
  if (host !== hostname() || !/^\d+$/.test(pid ?? '') || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
