// The script of the import's fold thread (FoldThread): FoldAlongside, with stores of its own.
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { parentPort, workerData } from 'node:worker_threads';
import { loadConfig } from '../config/config';
import { RECORD_KINDS } from '../read-models';
import { SqliteEventStore } from '../event-store/sqlite-event-store';
import { UpcastingEventStore } from '../event-store/upcasting-event-store';
import { DataKeys } from '../sealing/data-keys';
import { SealedEventStore } from '../sealing/sealed-event-store';
import { openKeyStore, openReadStore, sharedSqliteConnection } from '../stores/stores.module';
import { FoldAlongside } from './import-fold';
import type { FoldOrder, FoldReport } from './import-fold-thread';

const report = (message: FoldReport) => parentPort!.postMessage(message);

async function fold(): Promise<void> {
  // As the import's own thread: the projectors' log lines to stderr, stdout being the refused rows and the report.
  Logger.overrideLogger({
    log: () => undefined,
    warn: (m: unknown) => void process.stderr.write(`${String(m)}\n`),
    error: (m: unknown) => void process.stderr.write(`${String(m)}\n`),
  });
  // The import's instance id: one holder of the leases, which the fold at the end (foldImported) holds on and gives back.
  const { cacheMiB, instanceId } = workerData as { cacheMiB: number; instanceId: string };
  const config = { ...loadConfig(), instanceId };
  // As openStores makes them, the sealed store at hand (the import's thread sealed what was written
  // before encryption); the key store without the large cache: the values come from that thread.
  const sqlite = sharedSqliteConnection(config, cacheMiB)!;
  const sealed = new SealedEventStore(new SqliteEventStore(sqlite), new DataKeys(await openKeyStore(config)), RECORD_KINDS);
  const eventStore = await UpcastingEventStore.open(sealed, RECORD_KINDS);
  const readStore = await openReadStore(config, sqlite);
  const interrupted = new AbortController();
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  parentPort!.on('message', (order: FoldOrder) => {
    if ('values' in order) return sealed.keepValues(order.values);
    if (order.end === 'interrupted') interrupted.abort();
    end();
  });
  try {
    const alongside = await FoldAlongside.start(eventStore, readStore, config, interrupted.signal);
    report({ started: alongside !== undefined });
    if (!alongside) return;
    alongside.onProgress = (done, failed) => report({ done, failed });
    try {
      await ended;
      if (!interrupted.signal.aborted) {
        await alongside.finish();
        report({ live: true });
      }
    } finally {
      await alongside.close();
    }
  } finally {
    await eventStore.close();
    await readStore.close();
    parentPort!.close();
  }
}

fold().catch((error: unknown) => report({ error: (error as Error).message }));
