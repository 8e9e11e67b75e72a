"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.eventsTail = eventsTail;
const positions_1 = require("../projections/positions");
async function eventsTail(eventStore, options) {
    const from = await eventStore.headPosition();
    process.stderr.write(`Waiting for events after position ${(0, positions_1.formatPosition)(from)} (Ctrl-C to stop)\n`);
    for await (const batch of eventStore.subscribeToAll(from, { signal: options.signal })) {
        for (const event of batch.events) {
            if (!options.stream || event.streamId === options.stream)
                options.write(JSON.stringify(toJson(event)) + '\n');
        }
    }
}
const toJson = (event) => ({
    position: (0, positions_1.formatPosition)(event.position),
    streamId: event.streamId,
    revision: event.revision,
    id: event.id,
    type: event.type,
    recordedAt: event.recordedAt.toISOString(),
    data: event.data,
    metadata: event.metadata,
});
//# sourceMappingURL=events.js.map