import { Inject, Injectable } from '@nestjs/common';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';
import { CURSOR_SECRET_ID, FeedCursors } from './feed-cursors';

/**
 * The feed's cursors, sealed with a secret kept in the key store: made by the first instance that
 * needs it, the same for every instance after. Read once, on the first page served; a key store
 * unreachable then answers that page 503, and the next page tries again.
 */
@Injectable()
export class FeedCursorSecret {
  private loading?: Promise<FeedCursors>;

  constructor(@Inject(DATA_KEYS) private readonly keys: DataKeys) {}

  cursors(): Promise<FeedCursors> {
    this.loading ??= this.keys.store.obtain(CURSOR_SECRET_ID).then(
      (secret) => {
        if (!secret) throw new Error(`The key store's ${CURSOR_SECRET_ID} secret was destroyed`);
        return new FeedCursors(secret);
      },
      (error: unknown) => {
        this.loading = undefined;
        throw error;
      },
    );
    return this.loading;
  }
}
