"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SqliteEventStore = void 0;
const sealed_event_store_1 = require("../erasure/sealed-event-store");
const instance_1 = require("../instance");
const sqlite_database_1 = require("../storage/sqlite-database");
const event_store_port_1 = require("./event-store.port");
const EVENT_COLUMNS = 'global_position, event_id, stream_id, stream_revision, type, data, metadata, recorded_at';
const DEFAULT_BATCH = 1000;
const SEALED_SINCE = sealed_event_store_1.SEALED_SCHEMA_VERSION;
class SqliteEventStore {
    constructor(db, pollIntervalMs = 10) {
        this.db = db;
        this.pollIntervalMs = pollIntervalMs;
        this.wakeUps = new Set();
        this.pending = [];
        this.selectAfter = new Map();
        db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        global_position INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id        TEXT    NOT NULL UNIQUE,
        stream_id       TEXT    NOT NULL,
        stream_revision INTEGER NOT NULL,
        type            TEXT    NOT NULL,
        data            TEXT    NOT NULL,
        metadata        TEXT    NOT NULL,
        recorded_at     INTEGER NOT NULL,
        UNIQUE (stream_id, stream_revision)
      );
    `);
        const selectLastRevision = db.prepare('SELECT max(stream_revision) AS rev FROM events WHERE stream_id = ?');
        const selectById = db.prepare('SELECT * FROM events WHERE event_id = ?');
        const insert = db.prepare(`INSERT INTO events (event_id, stream_id, stream_revision, type, data, metadata, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`);
        this.selectStream = db
            .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = ? AND stream_revision >= ? ORDER BY stream_revision`)
            .raw();
        this.selectHead = db.prepare('SELECT max(global_position) AS pos FROM events');
        this.selectPlaintext = db
            .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE global_position > ? AND json_extract(metadata, '$.schemaVersion') < ${SEALED_SINCE}
         ORDER BY global_position LIMIT ?`)
            .raw();
        this.replaceOne = db.prepare(`UPDATE events SET data = ?, metadata = ? WHERE global_position = ? AND json_extract(metadata, '$.schemaVersion') < ${SEALED_SINCE}`);
        const appendTx = db.transaction((streamId, events, expected) => {
            const earlier = selectById.get(events[0].id);
            if (earlier && earlier.stream_id === streamId) {
                const last = selectById.get(events[events.length - 1].id) ?? earlier;
                return { revision: last.stream_revision, position: toPosition(last.global_position) };
            }
            const current = selectLastRevision.get(streamId)?.rev ?? null;
            const matches = expected === 'any' || (expected === 'no_stream' ? current === null : current === expected);
            if (!matches)
                throw new event_store_port_1.WrongExpectedRevisionError(streamId, expected, current ?? 'no_stream');
            const now = Date.now();
            let revision = current ?? -1;
            let position = 0;
            for (const event of events) {
                revision += 1;
                const info = insert.run(event.id, streamId, revision, event.type, JSON.stringify(event.data), JSON.stringify(event.metadata), now);
                position = Number(info.lastInsertRowid);
            }
            return { revision, position: toPosition(position) };
        });
        const groupTx = db.transaction((group) => group.map(({ streamId, events, expected }) => {
            try {
                return { result: appendTx(streamId, events, expected) };
            }
            catch (error) {
                return { error };
            }
        }));
        this.appendGroup = (group) => groupTx.immediate(group);
        this.walSync = sqlite_database_1.WalSync.forDurable(db, () => this.selectHead.get()?.pos ?? 0);
        this.unhear = instance_1.siblings.hear('appended', () => this.wakeSubscribers());
    }
    async appendToStream(streamId, events, expected) {
        if (events.length === 0)
            throw new Error('appendToStream needs at least one event');
        return new Promise((resolve, reject) => {
            this.pending.push({ streamId, events, expected, resolve, reject });
            if (this.pending.length === 1)
                setImmediate(() => this.commitPending());
        });
    }
    async commitPending() {
        const group = this.pending;
        this.pending = [];
        let outcomes;
        try {
            outcomes = this.appendGroup(group);
            await this.durableUpTo(Math.max(0, ...outcomes.map((o) => ('result' in o ? Number(o.result.position.commit) : 0))));
        }
        catch (error) {
            for (const append of group)
                append.reject(error);
            return;
        }
        group.forEach((append, i) => {
            const outcome = outcomes[i];
            if ('result' in outcome)
                append.resolve(outcome.result);
            else
                append.reject(outcome.error);
        });
        this.wakeSubscribers();
        instance_1.siblings.tell('appended');
    }
    async durableUpTo(position) {
        await this.walSync?.upTo(position);
    }
    async readStream(streamId, fromRevision = 0) {
        return this.selectStream.all(streamId, fromRevision).map(toStoredEvent);
    }
    async headPosition() {
        const pos = this.selectHead.get()?.pos;
        return pos == null ? event_store_port_1.START : toPosition(pos);
    }
    eventsBetween(from, to) {
        return Math.max(0, Number(to.commit - (from.commit < 0n ? 0n : from.commit)));
    }
    async *subscribeToAll(from, options) {
        const selectAfter = this.selectAfterBy(options.maxBatchSize ?? DEFAULT_BATCH);
        let after = Number(from.commit);
        while (!options.signal.aborted) {
            const rows = selectAfter.all(after);
            if (rows.length === 0) {
                await this.nextAppend(options.signal);
                continue;
            }
            after = rows[rows.length - 1][0];
            await this.durableUpTo(after);
            const prefix = options.streamPrefix ?? '';
            const events = rows.filter((r) => r[2].startsWith(prefix)).map(toStoredEvent);
            yield { events, position: toPosition(after) };
        }
    }
    selectAfterBy(batchSize) {
        if (!Number.isSafeInteger(batchSize) || batchSize < 1)
            throw new Error(`A batch size must be a whole number above 0, not ${batchSize}`);
        let statement = this.selectAfter.get(batchSize);
        if (!statement) {
            statement = this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE global_position > ? ORDER BY global_position LIMIT ${batchSize}`).raw();
            this.selectAfter.set(batchSize, statement);
        }
        return statement;
    }
    get mayHoldPlaintext() {
        return this.db.pragma('user_version', { simple: true }) === 0;
    }
    plaintextEvents(after, limit) {
        return this.selectPlaintext.all(after, limit).map(toStoredEvent);
    }
    replacePlaintext(events) {
        this.db.transaction(() => {
            for (const e of events)
                this.replaceOne.run(JSON.stringify(e.data), JSON.stringify(e.metadata), Number(e.position.commit));
        })();
    }
    markSealed() {
        this.db.pragma(`user_version = ${SEALED_SINCE}`);
    }
    async close() {
        this.unhear();
        this.wakeSubscribers();
        await this.walSync?.close();
        this.db.close();
    }
    wakeSubscribers() {
        for (const wake of [...this.wakeUps])
            wake();
    }
    nextAppend(signal) {
        return new Promise((resolve) => {
            const done = () => {
                clearTimeout(timer);
                this.wakeUps.delete(done);
                signal.removeEventListener('abort', done);
                resolve();
            };
            const timer = setTimeout(done, this.pollIntervalMs);
            this.wakeUps.add(done);
            signal.addEventListener('abort', done, { once: true });
        });
    }
}
exports.SqliteEventStore = SqliteEventStore;
function toPosition(globalPosition) {
    const p = BigInt(globalPosition);
    return { commit: p, prepare: p };
}
function toStoredEvent([globalPosition, id, streamId, revision, type, data, metadata, recordedAt]) {
    return {
        id,
        streamId,
        revision,
        position: toPosition(globalPosition),
        type,
        data: JSON.parse(data),
        metadata: JSON.parse(metadata),
        recordedAt: new Date(recordedAt),
    };
}
//# sourceMappingURL=sqlite-event-store.js.map