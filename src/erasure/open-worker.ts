// The script of OpeningThread's worker: opens each batch it is sent and answers with the plaintexts.
import { parentPort } from 'node:worker_threads';
import { KEY_BYTES, openOrNull } from './data-keys';
import type { OpenAnswer, OpenRequest } from './opening-thread';

parentPort!.on('message', ({ id, sealed, contexts, keyTable, keyOf }: OpenRequest) => {
  const keyAt = (k: number) => (k < 0 ? undefined : keyTable.subarray(k * KEY_BYTES, (k + 1) * KEY_BYTES));
  const opened = sealed.map((value, i) => openOrNull(keyAt(keyOf[i]), value, contexts[i]));
  parentPort!.postMessage({ id, opened } satisfies OpenAnswer);
});
