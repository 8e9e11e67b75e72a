import type { AppendOutcome, AppendResult, ExpectedRevision, NewEvent, StreamAppend } from './event-store.port';

/** Appends of appendToStreams a server store sends at once: enough to fill its pipeline, few enough not to flood it. */
export const APPENDS_AT_ONCE = 32;

/**
 * appendToStreams by appendToStream, at most `atOnce` under way at a time, for a store whose appends
 * are calls to a server: each outcome is its append's result or what it threw. Appends to one stream
 * go one after the other, in the order given, as SQLite's one transaction applies them: sent
 * together, the server could take the later first.
 */
export async function appendEach(
  appends: StreamAppend[],
  appendOne: (streamId: string, events: NewEvent[], expected: ExpectedRevision) => Promise<AppendResult>,
  atOnce = APPENDS_AT_ONCE,
): Promise<AppendOutcome[]> {
  const outcomes = new Array<AppendOutcome>(appends.length);
  let next = 0;
  /** By stream, its last append taken so far (it never rejects: its outcome holds the error). */
  const last = new Map<string, Promise<void>>();
  const worker = async () => {
    while (next < appends.length) {
      const i = next++;
      const { streamId, events, expected } = appends[i];
      const before = last.get(streamId);
      const append = (async () => {
        await before;
        try {
          outcomes[i] = { result: await appendOne(streamId, events, expected) };
        } catch (error) {
          outcomes[i] = { error };
        }
      })();
      last.set(streamId, append);
      await append;
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, appends.length) }, worker));
  return outcomes;
}
