import { existsSync } from 'node:fs';
import { type AppConfig, loadConfig } from '../config/config';
import { ErasureLog, LOOKUP_BATCH } from '../key-store/erasure-log';
import { RECORD_KINDS } from '../read-models';
import { REGISTERED_KINDS } from '../record-kinds';
import { DataKeys } from '../sealing/data-keys';
import { keysFile, openEventStore, openKeyStore, openReadStore, sharedSqliteConnection, usesSqliteFile } from '../stores/stores.module';
import { MissingStoreError } from './output';

// `erasures apply`: the erasure log applied again to the stores, as `restore` does after its copy,
// for stores restored by hand (docs/operators.md, The erasure log).

export const ERASURES_APPLY_HELP = `Usage: npm run cli -- erasures apply

Applies the erasure log (ERASURE_LOG) again to the stores the configuration names, as restore does
after its copy: run it, with the service stopped, after restoring stores by hand (EventStoreDB's
and MongoDB's tools, or SQLite files copied back), before the service starts. Every erasure the
stores do not show whole is erased again: a key the key store still has is destroyed; a key
destroyed whose record's events lack the erasure event (the events restored from before the
erasure, the keys from after it) is made pending again. Either way the record's read model
documents are scrubbed, and the service's next start appends the erasure events, before it
answers. Erasures the stores show whole are left as they are: running it twice is harmless.

Options:
  --help    This help
`;

type Settings = Omit<AppConfig, 'accessTokens'>;

/** Runs `erasures apply` to its exit code: 0 done (a closing line on stdout); a failure is thrown, for the CLI to tell (exit 1). */
export async function erasuresApply(): Promise<number> {
  const config = loadConfig();
  // Opening a store that is not there would make an empty one: most likely the wrong directory.
  for (const [file, used] of [
    [config.sqliteFile, usesSqliteFile(config)],
    [keysFile(config), !config.mongodb],
  ] as const) {
    if (used && !existsSync(file)) {
      throw new MissingStoreError(`No store at ${file}: set DATA_DIR to the data directory the stores were restored into.`);
    }
  }
  const log = new ErasureLog(config.erasureLog);
  if (!existsSync(log.file)) {
    process.stderr.write(`No erasure log at ${log.file} (ERASURE_LOG): set ERASURE_LOG to the log the service wrote, if it erased records.\n`);
    process.stdout.write(`Applied again 0 erasures: there is no erasure log at ${log.file}.\n`);
    return 0;
  }
  const again = await applyErasureLog(config, log);
  process.stdout.write(
    again > 0
      ? `Applied again ${again === 1 ? '1 erasure' : `${again} erasures`} of the erasure log ${log.file}: their keys are destroyed and their read models scrubbed; the service appends their erasure events as it starts, before it answers.\n`
      : `Applied again 0 erasures of the erasure log ${log.file}: the stores show each of its erasures whole.\n`,
  );
  return 0;
}

/**
 * Every erasure of the log that the stores do not show whole: a key the key store still has (keys
 * restored from before the erasure) is destroyed; a key destroyed whose record's events lack the
 * erasure event (events restored from before it, keys from after it) is made pending again. Either
 * way the read model documents are scrubbed here, and the service's start finishes the erasure
 * (RecordEraser.finishPending). Returns how many. `restore` and `erasures apply` run it.
 */
export async function applyErasureLog(config: Settings, log: ErasureLog): Promise<number> {
  const entries = await log.entries();
  if (entries.length === 0) return 0;
  const keyStore = await openKeyStore(config);
  const sqlite = sharedSqliteConnection(config);
  const eventStore = await openEventStore(config, RECORD_KINDS, { keys: new DataKeys(keyStore), sqlite, log: (line) => process.stderr.write(`${line}\n`) });
  const readStore = await openReadStore(config, sqlite);
  let again = 0;
  try {
    for (const { kind, readModel } of REGISTERED_KINDS) {
      const prefix = `${kind.streamPrefix}-`;
      const ofKind = entries.filter((e) => e.key.startsWith(prefix));
      if (ofKind.length > 0) await readStore.ensureCollection(readModel.schema);
      for (let i = 0; i < ofKind.length; i += LOOKUP_BATCH) {
        const batch = ofKind.slice(i, i + LOOKUP_BATCH);
        const keys = await keyStore.getMany(batch.map((e) => e.key));
        const ids: string[] = [];
        for (const entry of batch) {
          if (keys.get(entry.key) !== null) {
            await keyStore.destroy(entry.key, entry.account);
          } else {
            const last = await eventStore.readLastEvent(entry.key);
            if (!last || last.type === kind.events.erased) continue;
            await keyStore.reopenErasure(entry.key, entry.account);
          }
          ids.push(entry.key.slice(prefix.length));
        }
        if (ids.length > 0) await readStore.erase(readModel.schema.name, ids);
        again += ids.length;
      }
    }
  } finally {
    await eventStore.close(); // closes the key store too
    await readStore.close();
  }
  return again;
}
