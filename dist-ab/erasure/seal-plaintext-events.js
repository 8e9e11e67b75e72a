"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.sealPlaintextEvents = sealPlaintextEvents;
const data_keys_1 = require("./data-keys");
const sealed_event_store_1 = require("./sealed-event-store");
const PAGE = 5000;
async function sealPlaintextEvents(store, keys, kinds) {
    if (!store.mayHoldPlaintext)
        return 0;
    const kindOf = (streamId) => kinds.find((k) => streamId.startsWith(`${k.streamPrefix}-`));
    const recordStream = async (recordId) => {
        for (const kind of kinds) {
            const streamId = `${kind.streamPrefix}-${recordId}`;
            if ((await store.readStream(streamId)).length > 0)
                return streamId;
        }
        return undefined;
    };
    let after = 0;
    let sealed = 0;
    for (let page = store.plaintextEvents(after, PAGE); page.length > 0; page = store.plaintextEvents(after, PAGE)) {
        const recordStreams = new Set(page.filter((e) => kindOf(e.streamId) && Object.keys(e.data).length > 0).map((e) => e.streamId));
        await Promise.all([...recordStreams].map((streamId) => keys.forWriting(streamId)));
        const replaced = [];
        for (const event of page) {
            replaced.push({ ...event, data: await sealedData(event), metadata: { ...event.metadata, schemaVersion: sealed_event_store_1.SEALED_SCHEMA_VERSION } });
        }
        store.replacePlaintext(replaced);
        sealed += page.length;
        after = Number(page[page.length - 1].position.commit);
    }
    store.markSealed();
    return sealed;
    async function sealedData(event) {
        const data = event.data;
        if (kindOf(event.streamId)) {
            const fields = Object.keys(data);
            if (fields.length === 0)
                return data;
            const key = await keys.forWriting(event.streamId);
            return { fields, sealed: (0, data_keys_1.seal)(key, JSON.stringify(fields.map((f) => data[f])), event.id) };
        }
        if (event.type === 'IdempotencyKeyClaimed') {
            const { fingerprint, recordId } = data;
            const streamId = await recordStream(recordId);
            return { recordId, fingerprint: streamId ? (0, data_keys_1.digest)(await keys.forWriting(streamId), fingerprint) : '' };
        }
        if (event.type === 'IdempotencyKeyAnswered') {
            const { body, revision } = data;
            const [label, record] = Object.entries(body.data)[0];
            const kind = kinds.find((k) => k.label === label);
            const key = await keys.forWriting(`${kind.streamPrefix}-${record.id}`);
            return { revision, sealed: (0, data_keys_1.seal)(key, JSON.stringify(body), event.streamId) };
        }
        return data;
    }
}
//# sourceMappingURL=seal-plaintext-events.js.map