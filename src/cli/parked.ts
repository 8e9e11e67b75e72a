import { userInfo } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventStore, START } from '../event-store/event-store.port';
import { isGoneFromThisMachine, newInstanceId } from '../instance';
import { settleParked } from '../projections/parked';
import { formatPosition } from '../projections/positions';
import type { Projection } from '../projections/projection';
import type { ParkedStream, ParkRequest, ReadDocuments, ReadGenerations, ReadLeases, SkippedEvent } from '../read-store/read-store.port';
import { formatTable } from './output';

type Stores = ReadDocuments & ReadGenerations & ReadLeases;

/** Who runs the command, for a skip's record: the OS user. */
export function operator(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
}

const shownEvent = (s: ParkedStream) => ({
  revision: s.first.revision,
  position: formatPosition(s.first.position),
  type: s.first.type,
  error: s.first.error,
});

/** `projections parked`: each read model's parked streams (live generation) and the events skipped from it (in any generation). */
export async function projectionsParked(readModels: Projection[], readStore: ReadGenerations, json: boolean): Promise<string> {
  const models: { name: string; generation: number; parked: ParkedStream[]; skipped: (SkippedEvent & { generation: number })[] }[] = [];
  for (const projection of readModels) {
    await readStore.ensureCollection(projection.schema);
    const name = projection.schema.name;
    const { live } = await readStore.status(name);
    models.push({
      name: projection.name,
      generation: live.generation,
      parked: await readStore.parked(name, live.generation),
      skipped: await readStore.skipped(name),
    });
  }
  if (json) {
    const out = models.map((m) => ({
      name: m.name,
      generation: m.generation,
      parked: m.parked.map((s) => ({
        streamId: s.streamId,
        first: shownEvent(s),
        waiting: s.waiting,
        parkedAt: new Date(s.parkedAt).toISOString(),
        request: s.request && { ...s.request, at: new Date(s.request.at).toISOString() },
      })),
      skipped: m.skipped.map((k) => ({
        generation: k.generation,
        streamId: k.streamId,
        revision: k.revision,
        position: formatPosition(k.position),
        type: k.type,
        error: k.error,
        by: k.by,
        at: new Date(k.at).toISOString(),
        reason: k.reason,
      })),
    }));
    return JSON.stringify({ readModels: out }, null, 2) + '\n';
  }
  const parked = models.flatMap((m) =>
    m.parked.map((s) => [
      m.name,
      s.streamId,
      `${s.first.revision} (position ${formatPosition(s.first.position)})`,
      s.first.type,
      String(s.waiting),
      s.first.error,
    ]),
  );
  const skipped = models.flatMap((m) =>
    m.skipped.map((k) => [m.name, String(k.generation), k.streamId, String(k.revision), k.type, k.by, new Date(k.at).toISOString(), k.reason]),
  );
  let text = parked.length === 0 ? 'No parked stream.\n' : formatTable(['READ MODEL', 'STREAM', 'FIRST PARKED', 'TYPE', 'WAITING', 'ERROR'], parked);
  if (skipped.length > 0)
    text += `\nSkipped for good:\n${formatTable(['READ MODEL', 'GENERATION', 'STREAM', 'REVISION', 'TYPE', 'BY', 'AT', 'REASON'], skipped)}`;
  return text;
}

export interface ParkedRequestOptions {
  /** How long to wait for the service that folds the read model to carry the request out. */
  timeoutMs: number;
  /** The lease's time to live, when the CLI takes it itself. */
  leaseMs: number;
  progress: (line: string) => void;
}

/** What became of one stream asked. */
interface Outcome {
  readModel: string;
  streamId: string;
  state: 'unparked' | 'parked' | 'no answer';
  /** Where it is parked now, when it still is. */
  at?: { revision: number; error: string };
}

/**
 * `projections retry <stream|all>` and `projections skip <stream> --reason`. The read model's
 * generation has one writer, the instance holding its lease, so the CLI does not fold into it
 * beside a running service: it records the request on each parked stream named (moving the
 * generation's request stamp), and the lease holder carries it out at its next poll (every
 * PARKED_POLL_MS) between two batches, while the CLI waits, bounded, saying what it waits for. When
 * no instance holds the lease (the service is stopped), the CLI takes the lease itself, carries the
 * requests out the same way (settleParked), and gives the lease back: a service starting meanwhile
 * waits for it, and loads the parked streams as they are then. The outcome is read back from the store.
 */
export async function requestOnParked(
  readModels: Projection[],
  eventStore: EventStore,
  readStore: Stores,
  target: string,
  request: Omit<ParkRequest, 'at'>,
  options: ParkedRequestOptions,
): Promise<{ text: string; code: number }> {
  const outcomes: Outcome[] = [];
  for (const projection of readModels) {
    await readStore.ensureCollection(projection.schema);
    const name = projection.schema.name;
    const { live } = await readStore.status(name);
    const asked = await readStore.requestParked(name, live.generation, target === 'all' ? 'all' : [target], { ...request, at: Date.now() });
    if (asked.length === 0) continue;
    const holder = newInstanceId();
    let current = await readStore.acquireLease(name, holder, options.leaseMs);
    if (current !== holder && isGoneFromThisMachine(current)) current = await readStore.acquireLease(name, holder, options.leaseMs, current);
    if (current === holder) {
      options.progress(`${projection.name}: no instance of the service folds it: carrying out the ${request.action} here`);
      try {
        const { live: now } = await readStore.status(name);
        await settleParked(projection, eventStore, readStore, now.generation, now.position ?? START, { holder, ttlMs: options.leaseMs });
      } finally {
        await readStore.releaseLease(name, holder).catch(() => undefined);
      }
    } else {
      options.progress(`${projection.name}: asked the service (${current}) to ${request.action} ${asked.join(', ')}; waiting for it`);
      const until = Date.now() + options.timeoutMs;
      let told = Date.now();
      for (;;) {
        const pending = (await readStore.parked(name, live.generation)).filter((s) => asked.includes(s.streamId) && s.request);
        if (pending.length === 0 || Date.now() >= until) break;
        if (Date.now() - told >= 2000) {
          options.progress(`${projection.name}: still waiting for ${pending.length} stream(s)`);
          told = Date.now();
        }
        await sleep(100);
      }
    }
    const after = await readStore.parked(name, live.generation);
    for (const streamId of asked) {
      const still = after.find((s) => s.streamId === streamId);
      outcomes.push(
        !still
          ? { readModel: projection.name, streamId, state: 'unparked' }
          : still.request
            ? { readModel: projection.name, streamId, state: 'no answer' }
            : { readModel: projection.name, streamId, state: 'parked', at: { revision: still.first.revision, error: still.first.error } },
      );
    }
  }
  if (outcomes.length === 0) {
    return { text: target === 'all' ? 'No parked stream.\n' : `${target} is not parked in any read model.\n`, code: target === 'all' ? 0 : 1 };
  }
  const lines = outcomes.map((o) =>
    o.state === 'unparked'
      ? `${o.readModel}: ${o.streamId} unparked: its parked events are folded`
      : o.state === 'parked'
        ? `${o.readModel}: ${o.streamId} is still parked, at revision ${o.at!.revision}: ${o.at!.error}`
        : `${o.readModel}: ${o.streamId}: the service did not carry out the ${request.action} within ${options.timeoutMs / 1000}s; it is still asked, and is carried out once the service folds again`,
  );
  return { text: lines.join('\n') + '\n', code: outcomes.every((o) => o.state === 'unparked') ? 0 : 1 };
}
