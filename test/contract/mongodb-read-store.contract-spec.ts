import { MongoClient } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { MongoDbReadStore } from '../../src/read-store/mongodb-read-store';
import { readStoreContract } from './read-store.contract';

/**
 * The ReadStore contract against a live MongoDB, when MONGODB_URI points at one
 * (`docker compose up -d mongo`, then `npm run test:integration`). Each run works in a database
 * of its own and drops it afterwards.
 */
const uri = process.env.MONGODB_URI;

if (uri) {
  readStoreContract('MongoDB', async () => {
    const database = `contract_${randomUUID().slice(0, 8)}`;
    const store = await MongoDbReadStore.connect(uri, database, 10_000);
    return {
      store,
      async dispose() {
        await store.close();
        const client = await MongoClient.connect(uri);
        await client.db(database).dropDatabase();
        await client.close();
      },
    };
  });
} else {
  // Jest shows nothing a skipped file prints: the title carries the reason, listed by test/support/skipped-reporter.js.
  describe.skip('ReadStore contract: MongoDB', () => {
    it('needs MONGODB_URI, which is not set (e.g. mongodb://localhost:27017; see docs/operators.md)', () => undefined);
  });
}
