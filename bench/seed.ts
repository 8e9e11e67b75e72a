import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../src/event-store/event-store.port';
import { SqliteEventStore } from '../src/event-store/sqlite-event-store';
import { openSqliteDatabase } from '../src/storage/sqlite-database';

/** Appends asked for at once: the event store's group commit makes each chunk one durable transaction. */
const CHUNK = 10_000;
const SAMPLE = 200;

export interface Seeded {
  count: number;
  ms: number;
  /** Customers in account-0 per account, and a sample of their ids spread over the whole seeding. */
  perAccount: number;
  sampleIds: string[];
}

/**
 * Seeds `customers` CustomerCreated events over `accounts` accounts (account-0 ... ) through the event
 * store, as the service's own writes would store them. In each account every 50th customer has
 * `listedEmail`, so the filtered list finds as many as on the small data; the others have their own.
 */
export async function seedCustomers(file: string, options: { customers: number; accounts: number; listedEmail: string }): Promise<Seeded> {
  const store = new SqliteEventStore(openSqliteDatabase(file, { durable: true }));
  const accountZero: string[] = [];
  const started = Date.now();
  try {
    for (let from = 0; from < options.customers; from += CHUNK) {
      const appends: Promise<unknown>[] = [];
      for (let i = from; i < Math.min(from + CHUNK, options.customers); i++) {
        const account = i % options.accounts;
        const nth = Math.floor(i / options.accounts);
        const id = randomUUID();
        if (account === 0) accountZero.push(id);
        const event: NewEvent = {
          id: randomUUID(),
          type: 'CustomerCreated',
          data: {
            name: `Customer ${i}`,
            email: nth % 50 === 0 ? options.listedEmail : `customer-${i}@example.com`,
            mobile: `0912${String(i).padStart(7, '0')}`,
            company: `Company ${nth % 1000}`,
            address: `${i} Bench Street`,
          },
          metadata: { accountId: `account-${account}`, correlationId: `seed-${i}`, causationId: `seed-${i}`, schemaVersion: 1 },
        };
        appends.push(store.appendToStream(`customer-${id}`, [event], 'no_stream'));
      }
      await Promise.all(appends);
    }
  } finally {
    await store.close();
  }
  const step = Math.max(1, Math.floor(accountZero.length / SAMPLE));
  return {
    count: options.customers,
    ms: Date.now() - started,
    perAccount: accountZero.length,
    sampleIds: accountZero.filter((_, i) => i % step === 0).slice(0, SAMPLE),
  };
}
