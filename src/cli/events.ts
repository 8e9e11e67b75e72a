import type { EventStore, StoredEvent } from '../event-store/event-store.port';
import { formatPosition } from '../projections/positions';

/** `events tail`: every event appended from now on (of one stream if given), one JSON line each, until the signal. */
export async function eventsTail(eventStore: EventStore, options: { stream?: string; signal: AbortSignal; write: (line: string) => void }): Promise<void> {
  const from = await eventStore.headPosition();
  process.stderr.write(`Waiting for events after position ${formatPosition(from)} (Ctrl-C to stop)\n`);
  for await (const batch of eventStore.subscribeToAll(from, { signal: options.signal })) {
    for (const event of batch.events) {
      if (!options.stream || event.streamId === options.stream) options.write(JSON.stringify(toJson(event)) + '\n');
    }
  }
}

const toJson = (event: StoredEvent) => ({
  position: formatPosition(event.position),
  streamId: event.streamId,
  revision: event.revision,
  id: event.id,
  type: event.type,
  recordedAt: event.recordedAt.toISOString(),
  data: event.data,
  metadata: event.metadata,
});
