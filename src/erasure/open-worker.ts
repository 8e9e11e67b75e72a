// The script of OpeningThread's worker: opens each batch it is sent and answers with the plaintexts.
import { createSecretKey, KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { KEY_BYTES, openOrNull } from './data-keys';
import type { OpenAnswer, OpenRequest } from './opening-thread';

parentPort!.on('message', ({ id, sealed, contexts, keyTable, keyOf }: OpenRequest) => {
  // Each key of the batch made a KeyObject once: a decipher given raw key bytes imports them on
  // every call (OpenSSL 3), which costs more than making the KeyObject, even for a key that opens
  // one value only (as in a rebuild, where most records have one event).
  const keys = new Map<number, KeyObject>();
  const keyAt = (k: number) => {
    if (k < 0) return undefined;
    let key = keys.get(k);
    if (!key) keys.set(k, (key = createSecretKey(keyTable.subarray(k * KEY_BYTES, (k + 1) * KEY_BYTES))));
    return key;
  };
  const opened = sealed.map((value, i) => openOrNull(keyAt(keyOf[i]), value, contexts[i]));
  parentPort!.postMessage({ id, opened } satisfies OpenAnswer);
});
