import { MongoClient } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { MongoDbKeyStore } from '../../src/key-store/mongodb-key-store';
import { keyStoreContract } from './key-store.contract';

/** The KeyStore contract against a live MongoDB, when MONGODB_URI points at one; a database of its own per run. */
const uri = process.env.MONGODB_URI;

if (uri) {
  keyStoreContract('MongoDB', async () => {
    const database = `keys_${randomUUID().slice(0, 8)}`;
    const store = await MongoDbKeyStore.connect(uri, database, 10_000);
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
  describe.skip('KeyStore contract: MongoDB', () => {
    it('needs MONGODB_URI, which is not set (e.g. mongodb://localhost:27017/?directConnection=true; see docs/operators.md)', () => undefined);
  });
}
