import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../src/event-store/event-store.port';
import { SqliteEventStore } from '../src/event-store/sqlite-event-store';
import { openSqliteDatabase } from '../src/storage/sqlite-database';

export interface SeededRecords {
  events: number;
  profileIds: string[];
  customerIds: string[];
}

const ACCOUNTS = ['account-a', 'account-b', 'account-c'];
/** Events per record: created, three updates, and a delete for every fifth record. */
const UPDATES = 3;

/**
 * Appends about `count` events of profiles, their slug reservations and customers straight into
 * the embedded event store at `sqliteFile`, through the adapter's own append (same checks, same
 * rows as the service writes) but many appends per transaction, so a million take seconds.
 * Benchmarks and tests use it to give projectors real work; the service need not run. With
 * `erasedOneIn` N, one record in N that is not deleted ends with an erasure. `version` 1 (the default)
 * writes record events as they were stored before events carried a version and a business time
 * (read through the first upcaster); 2, as the service writes them now.
 */
export async function seedEvents(sqliteFile: string, count: number, { erasedOneIn = 0, chunk = 20_000, version = 1 } = {}): Promise<SeededRecords> {
  const db = openSqliteDatabase(sqliteFile, { durable: false });
  const store = new SqliteEventStore(db);
  const seeded: SeededRecords = { events: 0, profileIds: [], customerIds: [] };
  const appends: Promise<unknown>[] = [];
  const append = (streamId: string, type: string, data: Record<string, unknown>, expected: 'no_stream' | number, accountId: string) => {
    const event: NewEvent = {
      id: randomUUID(),
      type,
      data,
      metadata: { accountId, correlationId: 'seed', causationId: 'seed', schemaVersion: 1 },
    };
    if (version === 2 && !streamId.startsWith('profile_slug-')) Object.assign(event.metadata, { occurredAt: new Date().toISOString(), eventVersion: 2 });
    appends.push(store.appendToStream(streamId, [event], expected));
    seeded.events += 1;
  };
  // One record with all its events: the appends are synchronous inside, so a transaction holds them.
  const seedRecord = (n: number) => {
    const id = randomUUID();
    const accountId = ACCOUNTS[n % ACCOUNTS.length];
    const isProfile = n % 2 === 0;
    const [kind, prefix] = isProfile ? ['Profile', 'profile'] : ['Customer', 'customer'];
    const stream = `${prefix}-${id}`;
    if (isProfile) {
      append(`profile_slug-shop-${n}`, 'SlugReserved', { slug: `shop-${n}`, profileId: id }, 'no_stream', accountId);
      seeded.profileIds.push(id);
    } else {
      seeded.customerIds.push(id);
    }
    const fields = isProfile
      ? { name: `Shop ${n}`, slug: `shop-${n}`, email: `shop${n}@example.com`, tel: `+1555${n}`, site: `https://shop${n}.example.com` }
      : { name: `Customer ${n}`, email: `c${n}@Example.com`, mobile: `+4470${n}`, company: `Company ${n % 1000} Ltd` };
    append(stream, `${kind}Created`, fields, 'no_stream', accountId);
    for (let u = 0; u < UPDATES; u++) append(stream, `${kind}Updated`, { name: `${fields.name} v${u + 1}` }, u, accountId);
    if (n % 5 === 4) append(stream, `${kind}Deleted`, {}, UPDATES, accountId);
    // Its key is left: a fold of the erasure event does the same work either way.
    else if (erasedOneIn > 0 && n % erasedOneIn === 0) append(stream, `${kind}Erased`, {}, UPDATES, accountId);
  };
  const seedChunk = db.transaction((from: number) => {
    let n = from;
    const until = seeded.events + chunk;
    while (seeded.events < until && seeded.events < count) seedRecord(n++);
    return n;
  });
  let next = 0;
  while (seeded.events < count) {
    next = seedChunk(next);
    await Promise.all(appends.splice(0));
  }
  await store.close();
  return seeded;
}
