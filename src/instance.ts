import cluster from 'node:cluster';
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

/**
 * What a worker of WORKERS=N tells the others as soon as it happens, so they need not wait for
 * their next poll: `appended` (events are in the embedded store, in these streams: whoever folds,
 * look now; whoever kept a fold of one of them, it is behind), `folded` (a read model's checkpoint
 * moved: whoever waits on it, look now). Outside a cluster worker, nothing is told or heard; other
 * instances go by their polls (FOLLOW_POLL_MS, the embedded store's poll interval) and by the
 * expected revision of each append. `write-failed` and `wrote` (a store's writes fail, or succeed
 * again: the store, and why it failed) keep the workers' readiness alike (see WriteFailures).
 */
export type SiblingNews = 'appended' | 'folded' | 'write-failed' | 'wrote';

const NEWS = 'siblingNews';
const ignoreFailure = () => undefined;

export const siblings = {
  /** `streams`: the stream ids the news is about (an append's), or its details (a write's). */
  tell(news: SiblingNews, streams: string[] = []): void {
    // News is a shortcut, the polls stay: a send that fails (the primary gone) is dropped, not thrown.
    if (cluster.isWorker && process.connected) process.send!({ [NEWS]: news, streams }, undefined, undefined, ignoreFailure);
  },
  /** Calls `listener` on each piece of `news` from another worker; returns what stops it. */
  hear(news: SiblingNews, listener: (streams: string[]) => void): () => void {
    if (!cluster.isWorker) return () => undefined;
    const onMessage = (message: unknown) => {
      const told = message as { [NEWS]?: unknown; streams?: unknown } | null;
      if (told?.[NEWS] === news) listener(Array.isArray(told.streams) ? (told.streams as string[]) : []);
    };
    process.on('message', onMessage);
    return () => void process.off('message', onMessage);
  },
};

/** In the primary: passes each worker's news on to every other worker. */
export function relaySiblingNews(): void {
  cluster.on('message', (from, message: Record<string, unknown> | null) => {
    if (typeof message?.[NEWS] !== 'string') return;
    for (const worker of Object.values(cluster.workers ?? {})) {
      // A worker dying under way fails the send: dropped, so the primary does not crash on it.
      if (worker && worker.id !== from.id && worker.isConnected()) worker.send(message, undefined, ignoreFailure);
    }
  });
}
