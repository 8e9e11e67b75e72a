import type { Collection } from 'mongodb';
import type { MongoLease } from './mongodb-mapping';
import { isDuplicateKey } from '../storage/mongodb-client';
import type { ReadLeases } from './read-store.port';

/** The projectors' leases in MongoDB, one document each, timed by the server's clock. */
export class MongoDbReadLeases implements ReadLeases {
  /** @param guard runs an operation with the driver's errors translated, as the read store does */
  constructor(
    private readonly leases: Collection<MongoLease>,
    private readonly guard: <T>(operation: () => Promise<T>) => Promise<T>,
  ) {}

  /**
   * One conditional upsert, timed by the server ($$NOW): it matches a lease that is the holder's (or
   * the dead holder's it replaces) or has expired; when it matches none and the lease exists, the
   * upsert's insert fails as a duplicate: someone else holds it.
   */
  async acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string> {
    return this.guard(async () => {
      try {
        await this.leases.updateOne(
          { _id: name, $or: [{ holder: { $in: replacing ? [holder, replacing] : [holder] } }, { $expr: { $lte: ['$expiresAt', '$$NOW'] } }] },
          [{ $set: { holder, expiresAt: { $add: ['$$NOW', ttlMs] } } }],
          { upsert: true },
        );
        return holder;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        return (await this.leases.findOne({ _id: name }))?.holder ?? '';
      }
    });
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.guard(() => this.leases.deleteOne({ _id: name, holder }));
  }
}
