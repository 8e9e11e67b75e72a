/**
 * kill -9 while clients write, then restart on the same data: every write that was answered 2xx
 * is stored exactly once, in the events and in the read models, and a write that got no answer is
 * either wholly there or not at all.
 */
import { randomInt } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { CUSTOMER } from '../../src/customers/customer.decider';
import type { StoredEvent } from '../../src/event-store/event-store.port';
import type { EventRow } from '../../src/event-store/sqlite-event-store';
import { PROFILE } from '../../src/profiles/profile.decider';
import { evolveRecord, RecordKind, RecordState } from '../../src/records/record';
import { Database } from '../../src/storage/sqlite-database';
import { openEventStore } from '../../src/stores/stores.module';
import { RECORD_KINDS } from '../../src/read-models';
import { startChildService } from '../support/child-service';
import { liveTable } from '../support/live-table';
import { jsonRequest, rawRequest } from '../support/raw-http';
import { makeDataDir, TOKENS } from '../support/test-app';
import { describeOnSqlite } from '../support/stores';

const KINDS: { kind: RecordKind; path: string }[] = [
  { kind: CUSTOMER, path: 'customers' },
  { kind: PROFILE, path: 'profiles' },
];
const WORKERS = 8;

type Op = 'created' | 'updated' | 'deleted';
/** One write request: its X-Request-Id (the events' correlationId) and whether it was answered 2xx. */
interface Write {
  requestId: string;
  kind: RecordKind;
  op: Op;
  id?: string;
  answered: boolean;
}

describeOnSqlite('a kill -9 while writing', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('loses no answered write, duplicates none, and half-applies none', async () => {
    const first = await startChildService(dataDir);
    const agent = new Agent({ keepAlive: true });
    const writes: Write[] = [];
    let answered = 0;
    let stopped = false;

    /** Creates, updates twice and sometimes deletes records until the service dies. */
    const worker = async (w: number) => {
      for (let n = 0; !stopped; n++) {
        const { kind, path } = KINDS[n % KINDS.length];
        const send = async (op: Op, method: string, url: string, id?: string, body?: unknown): Promise<string> => {
          const write: Write = { requestId: `w${w}-n${n}-${op}-${writes.length}`, kind, op, id, answered: false };
          writes.push(write);
          const res = await rawRequest(first.url, jsonRequest(method, url, TOKENS.a, body, write.requestId), agent);
          if (res.status < 200 || res.status > 299) throw new Error(`${method} ${url}: ${res.status} ${res.text}`);
          write.id ??= (Object.values(JSON.parse(res.text).data)[0] as { id: string }).id;
          write.answered = true;
          answered++;
          return write.id;
        };
        try {
          const id = await send('created', 'POST', `/v1/${path}`, undefined, { email: `w${w}n${n}@example.com`, name: `created ${w}/${n}` });
          for (const round of [1, 2]) await send('updated', 'PUT', `/v1/${path}/${id}`, id, { name: `update ${round} of ${w}/${n}` });
          if (n % 3 === 0) await send('deleted', 'DELETE', `/v1/${path}/${id}`, id);
        } catch (error) {
          // Only a dead service may fail a request here.
          if (!stopped) throw error;
          return;
        }
      }
    };

    const running = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    const killAfter = randomInt(20, 120);
    while (answered < killAfter) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, randomInt(0, 50)));
    first.crash();
    stopped = true;
    expect(await first.exited).toBeNull();
    await running;
    agent.destroy();
    // The kill came with writes in flight, at most one per worker: a worker whose answer was already
    // on its way when the kill was sent finished its record and stopped with nothing out.
    const unanswered = writes.filter((w) => !w.answered);
    expect(unanswered.length).toBeGreaterThan(0);
    expect(new Set(unanswered.map((w) => w.requestId.split('-')[0])).size).toBe(unanswered.length);

    expect(writes.filter((w) => w.answered).length).toBeGreaterThanOrEqual(killAfter);

    const second = await startChildService(dataDir);
    // A write waits for every read model to reach it, so after this one they hold everything before it.
    const sync = await rawRequest(second.url, jsonRequest('POST', '/v1/customers', TOKENS.a, { email: 'after@example.com' }));
    expect(sync.status).toBe(201);
    const syncId = JSON.parse(sync.text).data.Customer.id as string;

    const db = new Database(join(dataDir, 'service.sqlite'), { readonly: true });
    const sealed = await openEventStore({ sqliteFile: join(dataDir, 'service.sqlite') }, RECORD_KINDS);
    try {
      const rows = db.prepare('SELECT * FROM events ORDER BY global_position').all() as EventRow[];
      const events = rows.map(toStoredEvent);
      const byRequest = groupBy(events, (e) => e.metadata.correlationId);
      const streams = groupBy(events, (e) => e.streamId);

      // Every answered write is there exactly once, as the event it should have appended.
      for (const write of writes.filter((w) => w.answered)) {
        const appended = byRequest.get(write.requestId) ?? [];
        expect({ write: write.requestId, types: appended.map((e) => e.type), streams: appended.map((e) => e.streamId) }).toEqual({
          write: write.requestId,
          types: [write.kind.events[write.op]],
          streams: [`${write.kind.streamPrefix}-${write.id}`],
        });
      }
      // A write without an answer appended its one event or none: never twice, never part of it.
      for (const write of writes.filter((w) => !w.answered)) {
        const appended = byRequest.get(write.requestId) ?? [];
        expect(appended.map((e) => e.type)).toEqual(appended.length ? [write.kind.events[write.op]] : []);
      }

      // Every stream is whole: revisions 0..n-1, a create first, and its read model row is its fold.
      for (const { kind, path } of KINDS) {
        const table = db.prepare(`SELECT * FROM ${liveTable(db, path)}`).all() as {
          id: string;
          revision: number;
          deleted: number;
          fields: string;
          account_id: string;
        }[];
        const folded = new Map<string, RecordState>();
        for (const [streamId, stream] of streams) {
          if (!streamId.startsWith(`${kind.streamPrefix}-`)) continue;
          expect(stream.map((e) => e.revision)).toEqual(stream.map((_, i) => i));
          let state: RecordState | null = null;
          // Folded as the service reads them: values opened with the record's key.
          for (const event of await sealed.readStream(streamId)) state = evolveRecord(kind, state, event);
          folded.set(state!.id, state!);
        }
        // No row without its events, and every stream has its row, as folded.
        expect(new Set(table.map((r) => r.id))).toEqual(new Set(folded.keys()));
        for (const row of table) {
          const state = folded.get(row.id)!;
          expect({ id: row.id, revision: row.revision, deleted: row.deleted === 1, fields: JSON.parse(row.fields), accountId: row.account_id }).toEqual({
            id: state.id,
            revision: state.revision,
            deleted: state.deleted,
            fields: state.fields,
            accountId: state.accountId,
          });
        }

        // And over HTTP: each record as its events leave it.
        for (const state of folded.values()) {
          if (state.id === syncId) continue;
          const res = await rawRequest(second.url, jsonRequest('GET', `/v1/${path}/${state.id}`, TOKENS.a));
          if (state.deleted) {
            expect({ id: state.id, status: res.status }).toEqual({ id: state.id, status: 404 });
          } else {
            expect({ id: state.id, status: res.status }).toEqual({ id: state.id, status: 200 });
            expect(JSON.parse(res.text).data[0][kind.label]).toMatchObject({ id: state.id, name: state.fields.name, email: state.fields.email });
          }
        }
      }
    } finally {
      db.close();
      await sealed.close();
      second.process.kill('SIGTERM');
      await second.exited;
    }
  });
});

function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    revision: row.stream_revision,
    position: { commit: BigInt(row.global_position), prepare: BigInt(row.global_position) },
    type: row.type,
    data: JSON.parse(row.data),
    metadata: JSON.parse(row.metadata),
    recordedAt: new Date(row.recorded_at),
  };
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}
