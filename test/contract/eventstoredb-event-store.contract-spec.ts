import { EventStoreDbEventStore } from '../../src/event-store/eventstoredb-event-store';
import { eventStoreContract } from './event-store.contract';

/**
 * The EventStore contract against a live EventStoreDB, when EVENTSTORE_CONNECTION_STRING points at
 * one (`docker compose up -d eventstore`, then `npm run test:integration`). Streams are named per
 * run, so a shared server needs no cleaning.
 */
const connectionString = process.env.EVENTSTORE_CONNECTION_STRING;

if (connectionString) {
  eventStoreContract('EventStoreDB', async () => {
    const store = await EventStoreDbEventStore.connect(connectionString, 10_000);
    return { store, dispose: () => store.close() };
  });
} else {
  // Jest shows nothing a skipped file prints: the title carries the reason, listed by test/support/skipped-reporter.js.
  describe.skip('EventStore contract: EventStoreDB', () => {
    it('needs EVENTSTORE_CONNECTION_STRING, which is not set (e.g. esdb://localhost:2113?tls=false; see docs/operators.md)', () => undefined);
  });
}
