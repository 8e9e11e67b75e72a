import { Cipher, createCipheriv, createDecipheriv, createHmac, Decipher, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Position } from '../event-store/event-store.port';

/** The key store id of the secret cursors are sealed with: made once, shared by every instance. */
export const CURSOR_SECRET_ID = 'feed-cursors';

const TAG_BYTES = 8;
/** A cursor's length in base64url: a 16-byte block and its tag. */
const CURSOR_LENGTH = Math.ceil(((16 + TAG_BYTES) * 4) / 3);

/**
 * Cursors of the change feed: an event's place in the event store's global order, sealed for one
 * account. A plain position would tell a consumer how many changes other accounts made between two
 * of its own; sealed (AES-256 of the one 16-byte block, with a key derived for the account), it
 * tells nothing, and stays the same for the same entry, so consumers can deduplicate by it. Its
 * tag (the sealed block sealed again under a second key of the account: a pseudorandom function of
 * one block, so a MAC, at the cost of one AES block) makes any cursor not made for this account, or
 * altered, fail to open: a 400, never someone else's place. Valid for good: the secret lives in the
 * key store beside the data keys.
 */
export class FeedCursors {
  /** Per account: its ciphers (ECB keeps no state between blocks, so one serves every cursor). */
  private readonly keys = new LRUCache<string, AccountKeys>({ max: 10_000 });

  constructor(private readonly secret: Buffer) {}

  seal(accountId: string, position: Position): string {
    const block = Buffer.allocUnsafe(16);
    block.writeBigInt64BE(position.commit, 0);
    block.writeBigInt64BE(position.prepare, 8);
    const keys = this.keysOf(accountId);
    const sealed = keys.seal.update(block);
    return Buffer.concat([sealed, tagOf(keys.tag, sealed)]).toString('base64url');
  }

  /** The position a cursor of this account names; undefined for anything else. */
  open(accountId: string, cursor: string): Position | undefined {
    if (cursor.length !== CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
    const bytes = Buffer.from(cursor, 'base64url');
    const sealed = bytes.subarray(0, 16);
    const keys = this.keysOf(accountId);
    if (!timingSafeEqual(tagOf(keys.tag, sealed), bytes.subarray(16))) return undefined;
    const block = keys.open.update(sealed);
    return { commit: block.readBigInt64BE(0), prepare: block.readBigInt64BE(8) };
  }

  private keysOf(accountId: string): AccountKeys {
    let keys = this.keys.get(accountId);
    if (!keys) {
      const derive = (use: string) => createHmac('sha256', this.secret).update(`${use}\0${accountId}`).digest();
      const seal = derive('feed-cursor-seal');
      keys = {
        seal: createCipheriv('aes-256-ecb', seal, null).setAutoPadding(false),
        open: createDecipheriv('aes-256-ecb', seal, null).setAutoPadding(false),
        tag: createCipheriv('aes-256-ecb', derive('feed-cursor-tag'), null).setAutoPadding(false),
      };
      this.keys.set(accountId, keys);
    }
    return keys;
  }
}

interface AccountKeys {
  seal: Cipher;
  open: Decipher;
  tag: Cipher;
}

const tagOf = (tag: Cipher, sealed: Buffer) => tag.update(sealed).subarray(0, TAG_BYTES);
