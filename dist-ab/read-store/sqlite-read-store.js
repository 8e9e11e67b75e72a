"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SqliteReadStore = void 0;
const event_store_port_1 = require("../event-store/event-store.port");
const sqlite_database_1 = require("../storage/sqlite-database");
const read_store_port_1 = require("./read-store.port");
const DOCUMENT_COLUMNS = ['id', 'account_id', 'revision', 'seq', 'deleted', 'created', 'fields'];
const DOCUMENT = DOCUMENT_COLUMNS.join(', ');
const NAME = /^[a-z][a-z0-9_]*$/;
const ROWIDS_IN_MEMORY = 1_000_000;
const REBUILD_WAL_CHECKPOINT_PAGES = 10_000;
const filterColumn = (field) => `f_${field}`;
const filterKey = (kind, value) => (kind === 'exact' ? value : value.toLowerCase());
const tableName = (collection, generation) => `${collection}__g${generation}`;
class SqliteReadStore {
    constructor(db, rowidsInMemory = ROWIDS_IN_MEMORY) {
        this.db = db;
        this.rowidsInMemory = rowidsInMemory;
        this.collections = new Map();
        this.builds = new Map();
        this.checkpointPagesBefore = 0;
        this.lastLive = new Map();
        db.exec(`
      CREATE TABLE IF NOT EXISTS read_model_generations (
        collection  TEXT    NOT NULL,
        generation  INTEGER NOT NULL,
        state       TEXT    NOT NULL CHECK (state IN ('live', 'building', 'retired', 'dropped')),
        commit_pos  TEXT,
        prepare_pos TEXT,
        failure     TEXT,
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (collection, generation)
      );
      CREATE TABLE IF NOT EXISTS read_model_leases (
        name       TEXT    PRIMARY KEY,
        holder     TEXT    NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `);
        this.selectGenerations = db.prepare('SELECT * FROM read_model_generations WHERE collection = ? ORDER BY generation');
        this.selectGeneration = db.prepare('SELECT * FROM read_model_generations WHERE collection = ? AND generation = ?');
        this.selectLive = db
            .prepare("SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'")
            .pluck();
        this.selectState = db
            .prepare('SELECT state FROM read_model_generations WHERE collection = ? AND generation = ?')
            .pluck();
        this.saveCheckpoint = db.prepare(`UPDATE read_model_generations SET commit_pos = ?, prepare_pos = ?, failure = NULL, updated_at = ?
       WHERE collection = ? AND generation = ?`);
        this.saveFailure = db.prepare('UPDATE read_model_generations SET failure = ?, updated_at = ? WHERE collection = ? AND generation = ?');
        this.setState = db.prepare('UPDATE read_model_generations SET state = ?, updated_at = ? WHERE collection = ? AND generation = ?');
        this.insertGeneration = db.prepare('INSERT INTO read_model_generations (collection, generation, state, updated_at) VALUES (?, ?, ?, ?)');
        this.takeLease = db.prepare(`INSERT INTO read_model_leases (name, holder, expires_at) VALUES (@name, @holder, @expires)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE read_model_leases.holder IN (excluded.holder, @replacing) OR read_model_leases.expires_at <= @now`);
        this.selectLeaseHolder = db.prepare('SELECT holder FROM read_model_leases WHERE name = ?').pluck();
        this.dropLease = db.prepare('DELETE FROM read_model_leases WHERE name = ? AND holder = ?');
    }
    async ensureCollection(schema) {
        const names = [schema.name, ...Object.keys(schema.filters)];
        for (const name of names) {
            if (!NAME.test(name) || name.includes('__'))
                throw new Error(`Invalid collection or field name: ${name}`);
        }
        this.collections.set(schema.name, { schema, tables: new Map() });
        this.db
            .transaction(() => {
            if (this.selectGenerations.all(schema.name).length > 0)
                return;
            this.insertGeneration.run(schema.name, 1, 'live', Date.now());
            this.createTable(schema, 1, { indexed: true });
        })
            .immediate();
    }
    async getMany(collection, ids, generation) {
        const found = new Map();
        if (ids.length === 0)
            return found;
        if (generation !== undefined)
            this.assertWritable(collection, generation);
        const table = this.table(collection, generation ?? this.liveGeneration(collection));
        const build = this.builds.get(table.name);
        const rowids = build?.rowids;
        const rows = build && rowids
            ? build.selectByRowids.all(JSON.stringify(ids.map((id) => rowids.get(id)).filter((rowid) => rowid !== undefined)))
            : table.selectMany.all(JSON.stringify(ids));
        for (const row of rows)
            found.set(row.id, toDocument(row));
        return found;
    }
    async get(collection, accountId, id) {
        const { row } = this.readLive(collection, (table) => {
            const __t0 = process.hrtime.bigint(); const found = table.selectOne.get(id, accountId, collection); globalThis.__n=(globalThis.__n||0)+1; globalThis.__s=(globalThis.__s||0n)+(process.hrtime.bigint()-__t0); if (globalThis.__n % 20000 === 0) { console.error('GET avg us', Number(globalThis.__s)/20000/1000); globalThis.__s=0n; }
            return { live: found?.live_generation ?? null, row: found };
        });
        return row?.id ? toDocument(row) : null;
    }
    async oldest(collection, accountId) {
        const row = this.table(collection, this.liveGeneration(collection)).selectOldest.get(accountId);
        return row ? toDocument(row) : null;
    }
    async find(collection, query) {
        const { schema } = this.collection(collection);
        const fields = Object.keys(query.filters).sort();
        if (!Number.isSafeInteger(query.limit) || query.limit < 0)
            throw new Error(`A list's limit must be a whole number, not ${query.limit}`);
        const key = `${fields.join(',')}|${query.order}|${query.limit}`;
        const params = [query.accountId, ...fields.map((f) => filterKey(schema.filters[f], query.filters[f]))];
        const { documents, total } = this.readLive(collection, (table) => {
            const statements = this.findStatements(table, collection, fields, key, query);
            const { live_generation: live, total } = statements.count.get(collection, ...params);
            if (live !== table.generation)
                return { live, documents: [], total };
            const rows = statements.page.all(...params, query.offset);
            return { live, documents: rows.map(toDocument), total };
        });
        return { documents, total };
    }
    findStatements(table, collection, fields, key, { order, limit }) {
        const { schema } = this.collection(collection);
        let statements = table.finds.get(key);
        if (!statements) {
            const where = ['account_id = ?', 'deleted = 0'];
            for (const f of fields) {
                const kind = schema.filters[f];
                if (!kind)
                    throw new Error(`Collection ${collection} has no filter ${f}`);
                where.push(kind === 'contains-ci' ? `instr(${filterColumn(f)}, ?) > 0` : `${filterColumn(f)} = ?`);
            }
            const clause = where.join(' AND ');
            statements = {
                page: this.db.prepare(`SELECT ${DOCUMENT} FROM ${table.name} WHERE ${clause} ORDER BY seq ${order === 'newest' ? 'DESC' : 'ASC'} LIMIT ${limit} OFFSET ?`),
                count: this.db.prepare(`SELECT (${LIVE_GENERATION}) AS live_generation, (SELECT count(*) FROM ${table.name} WHERE ${clause}) AS total`),
            };
            table.finds.set(key, statements);
        }
        return statements;
    }
    readLive(collection, read) {
        let generation = this.lastLive.get(collection) ?? this.liveGeneration(collection);
        for (let attempt = 1;; attempt++) {
            let result;
            try {
                result = read(this.table(collection, generation));
            }
            catch (error) {
                if (attempt > 1 || !/no such table/.test(error.message))
                    throw error;
                generation = this.liveGeneration(collection);
                continue;
            }
            if (result.live === null)
                throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
            if (result.live === generation || attempt === 3) {
                this.lastLive.set(collection, generation);
                return result;
            }
            generation = result.live;
        }
    }
    async commit(collection, documents, checkpoint) {
        const { schema } = this.collection(collection);
        const { generation, position } = checkpoint;
        const filterFields = Object.keys(schema.filters);
        const name = tableName(collection, generation);
        const build = this.builds.get(name);
        const inserted = new Map();
        this.db
            .transaction(() => {
            const state = this.assertWritable(collection, generation);
            const table = this.table(collection, generation);
            if (state === 'building' && !build) {
                throw new Error(`Generation ${generation} of ${collection} is being built by another process`);
            }
            for (const d of documents) {
                const values = [
                    d.id,
                    d.accountId,
                    d.revision,
                    d.seq,
                    d.deleted ? 1 : 0,
                    d.created,
                    JSON.stringify(d.fields),
                    ...filterFields.map((f) => filterKey(schema.filters[f], d.fields[f] ?? '')),
                ];
                if (!build?.rowids) {
                    table.upsert().run(...values);
                    continue;
                }
                const rowid = build.rowids.get(d.id) ?? inserted.get(d.id);
                if (rowid === undefined)
                    inserted.set(d.id, Number(build.insert.run(...values).lastInsertRowid));
                else
                    build.update.run(...values.slice(1), rowid, d.revision);
            }
            const saved = positionOf(this.selectGeneration.get(collection, generation));
            const next = saved && (0, event_store_port_1.comparePositions)(position, saved) <= 0 ? saved : position;
            this.saveCheckpoint.run(next.commit.toString(), next.prepare.toString(), Date.now(), collection, generation);
        })
            .immediate();
        if (!build?.rowids)
            return;
        for (const [id, rowid] of inserted)
            build.rowids.set(id, rowid);
        if (build.rowids.size > this.rowidsInMemory) {
            this.db.exec(idIndex(name));
            build.rowids = null;
        }
    }
    async recordFailure(collection, generation, failure) {
        this.saveFailure.run(JSON.stringify(failure), Date.now(), collection, generation);
    }
    async status(collection) {
        const rows = this.selectGenerations.all(collection);
        const live = rows.find((r) => r.state === 'live');
        if (!live)
            throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
        const building = rows.find((r) => r.state === 'building');
        return { live: toStatus(live), building: building ? toStatus(building) : null };
    }
    async startRebuild(collection) {
        const { schema } = this.collection(collection);
        const generation = this.db
            .transaction(() => {
            const rows = this.selectGenerations.all(collection);
            for (const row of rows.filter((r) => r.state === 'building'))
                this.dropGeneration(collection, row.generation);
            const next = Math.max(0, ...rows.map((r) => r.generation)) + 1;
            this.insertGeneration.run(collection, next, 'building', Date.now());
            this.createTable(schema, next, { indexed: false });
            return next;
        })
            .immediate();
        this.builds.set(tableName(collection, generation), this.prepareBuild(schema, generation));
        if (this.builds.size === 1)
            this.checkpointPagesBefore = this.db.pragma('wal_autocheckpoint', { simple: true });
        this.db.pragma(`wal_autocheckpoint = ${Math.max(REBUILD_WAL_CHECKPOINT_PAGES, this.checkpointPagesBefore)}`);
        return generation;
    }
    async promote(collection, generation) {
        const { schema } = this.collection(collection);
        this.db
            .transaction(() => {
            if (this.selectState.get(collection, generation) === 'building')
                this.createIndexes(schema, generation);
        })
            .immediate();
        this.db
            .transaction(() => {
            const rows = this.selectGenerations.all(collection);
            const building = rows.find((r) => r.generation === generation && r.state === 'building');
            if (!building)
                throw new read_store_port_1.GenerationReplacedError(collection, generation);
            const live = rows.find((r) => r.state === 'live');
            if ((0, event_store_port_1.comparePositions)(positionOf(building) ?? event_store_port_1.START, positionOf(live) ?? event_store_port_1.START) < 0) {
                throw new read_store_port_1.RebuildBehindError(collection);
            }
            const now = Date.now();
            this.setState.run('retired', now, collection, live.generation);
            this.setState.run('live', now, collection, generation);
        })
            .immediate();
        this.endBuild(tableName(collection, generation));
    }
    async abandonRebuild(collection, generation) {
        try {
            this.db
                .transaction(() => {
                if (this.selectState.get(collection, generation) === 'building')
                    this.dropGeneration(collection, generation);
            })
                .immediate();
        }
        finally {
            this.endBuild(tableName(collection, generation));
        }
    }
    async erase(collection, id) {
        const { schema } = this.collection(collection);
        const blanks = Object.keys(schema.filters)
            .map((f) => `, ${filterColumn(f)} = ''`)
            .join('');
        this.db
            .transaction(() => {
            for (const row of this.selectGenerations.all(collection)) {
                if (row.state === 'dropped')
                    continue;
                this.db.prepare(`UPDATE ${tableName(collection, row.generation)} SET fields = '{}', deleted = 1${blanks} WHERE id = ?`).run(id);
            }
        })
            .immediate();
        await (0, sqlite_database_1.checkpointAndTruncate)(this.db);
    }
    async dropRetired(collection, graceMs) {
        const before = Date.now() - graceMs;
        this.db
            .transaction(() => {
            for (const row of this.selectGenerations.all(collection)) {
                if (row.state === 'retired' && row.updated_at <= before)
                    this.dropGeneration(collection, row.generation);
            }
        })
            .immediate();
    }
    async acquireLease(name, holder, ttlMs, replacing) {
        const now = Date.now();
        const taken = this.takeLease.run({ name, holder, expires: now + ttlMs, now, replacing: replacing ?? null }).changes === 1;
        return taken ? holder : (this.selectLeaseHolder.get(name) ?? '');
    }
    async releaseLease(name, holder) {
        this.dropLease.run(name, holder);
    }
    async close() {
        this.db.close();
    }
    createTable(schema, generation, { indexed }) {
        const t = tableName(schema.name, generation);
        const columns = Object.keys(schema.filters)
            .map((f) => `, ${filterColumn(f)} TEXT NOT NULL`)
            .join('');
        this.db.exec(`
      CREATE TABLE IF NOT EXISTS ${t} (
        id         TEXT    NOT NULL,
        account_id TEXT    NOT NULL,
        revision   INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        deleted    INTEGER NOT NULL,
        created    INTEGER NOT NULL,
        fields     TEXT    NOT NULL${columns}
      );
    `);
        if (indexed)
            this.createIndexes(schema, generation);
    }
    createIndexes(schema, generation) {
        const t = tableName(schema.name, generation);
        const exactIndexes = Object.keys(schema.filters)
            .filter((f) => schema.filters[f] !== 'contains-ci')
            .map((f) => `CREATE INDEX IF NOT EXISTS ${t}_by_${f} ON ${t} (account_id, ${filterColumn(f)}, seq) WHERE deleted = 0;`)
            .join('\n');
        this.db.exec(`
      ${idIndex(t)}
      CREATE INDEX IF NOT EXISTS ${t}_by_account ON ${t} (account_id, seq) WHERE deleted = 0;
      ${exactIndexes}
    `);
    }
    endBuild(name) {
        if (this.builds.delete(name) && this.builds.size === 0)
            this.db.pragma(`wal_autocheckpoint = ${this.checkpointPagesBefore}`);
    }
    dropGeneration(collection, generation) {
        this.collections.get(collection)?.tables.delete(generation);
        this.endBuild(tableName(collection, generation));
        this.db.exec(`DROP TABLE IF EXISTS ${tableName(collection, generation)}`);
        this.setState.run('dropped', Date.now(), collection, generation);
    }
    assertWritable(collection, generation) {
        const state = this.selectState.get(collection, generation);
        if (state !== 'live' && state !== 'building') {
            this.endBuild(tableName(collection, generation));
            throw new read_store_port_1.GenerationReplacedError(collection, generation);
        }
        return state;
    }
    liveGeneration(collection) {
        const generation = this.selectLive.get(collection);
        if (generation === undefined)
            throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
        return generation;
    }
    collection(name) {
        const c = this.collections.get(name);
        if (!c)
            throw new Error(`Unknown collection ${name}: call ensureCollection first`);
        return c;
    }
    prepareBuild(schema, generation) {
        const name = tableName(schema.name, generation);
        const columns = allColumns(schema);
        return {
            rowids: new Map(),
            insert: this.db.prepare(`INSERT INTO ${name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`),
            update: this.db.prepare(`UPDATE ${name} SET ${columns
                .slice(1)
                .map((col) => `${col} = ?`)
                .join(', ')} WHERE rowid = ? AND revision < ?`),
            selectByRowids: this.db.prepare(`SELECT ${DOCUMENT} FROM ${name} WHERE rowid IN (SELECT value FROM json_each(?))`),
        };
    }
    table(collection, generation) {
        const c = this.collection(collection);
        let table = c.tables.get(generation);
        if (table)
            return table;
        const name = tableName(collection, generation);
        const columns = allColumns(c.schema);
        let upsert;
        table = {
            name,
            generation,
            upsert: () => (upsert ??= this.db.prepare(`INSERT INTO ${name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
           ON CONFLICT (id) DO UPDATE SET ${columns
                .slice(1)
                .map((col) => `${col} = excluded.${col}`)
                .join(', ')}
           WHERE excluded.revision > ${name}.revision`)),
            selectOne: this.db.prepare(`SELECT g.generation AS live_generation, ${DOCUMENT_COLUMNS.map((c) => `d.${c}`).join(', ')} FROM read_model_generations g
         LEFT JOIN ${name} d ON d.id = ? AND d.account_id = ? AND d.deleted = 0
         WHERE g.collection = ? AND g.state = 'live'`),
            selectOldest: this.db.prepare(`SELECT ${DOCUMENT} FROM ${name} WHERE account_id = ? AND deleted = 0 ORDER BY seq LIMIT 1`),
            selectMany: this.db.prepare(`SELECT ${DOCUMENT} FROM ${name} WHERE id IN (SELECT value FROM json_each(?))`),
            finds: new Map(),
        };
        for (const old of c.tables.keys())
            if (old < generation - 1)
                c.tables.delete(old);
        c.tables.set(generation, table);
        return table;
    }
}
exports.SqliteReadStore = SqliteReadStore;
const LIVE_GENERATION = "SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'";
const idIndex = (table) => `CREATE UNIQUE INDEX IF NOT EXISTS ${table}_by_id ON ${table} (id);`;
function allColumns(schema) {
    return [...DOCUMENT_COLUMNS, ...Object.keys(schema.filters).map(filterColumn)];
}
function positionOf(row) {
    return row.commit_pos === null ? null : { commit: BigInt(row.commit_pos), prepare: BigInt(row.prepare_pos) };
}
function toStatus(row) {
    return {
        generation: row.generation,
        position: positionOf(row),
        failure: row.failure ? JSON.parse(row.failure) : null,
        updatedAt: row.updated_at,
    };
}
function toDocument(row) {
    return {
        id: row.id,
        accountId: row.account_id,
        revision: row.revision,
        seq: row.seq,
        deleted: row.deleted === 1,
        created: row.created,
        fields: JSON.parse(row.fields),
    };
}
//# sourceMappingURL=sqlite-read-store.js.map