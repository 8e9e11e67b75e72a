"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.OpeningThread = void 0;
const node_fs_1 = require("node:fs");
const node_path_1 = require("node:path");
const node_worker_threads_1 = require("node:worker_threads");
const data_keys_1 = require("./data-keys");
const SCRIPT = (0, node_path_1.join)(__dirname, 'open-worker.js');
class OpeningThread {
    constructor() {
        this.closed = false;
        this.nextId = 0;
        this.waiting = new Map();
    }
    static { this.available = (0, node_fs_1.existsSync)(SCRIPT); }
    open(sealed, contexts, keys) {
        if (this.closed)
            return Promise.reject(new Error('The store is closed'));
        const index = new Map();
        const keyOf = new Int32Array(keys.length);
        keys.forEach((key, i) => {
            if (key && !index.has(key))
                index.set(key, index.size);
            keyOf[i] = key ? index.get(key) : -1;
        });
        const keyTable = new Uint8Array(index.size * data_keys_1.KEY_BYTES);
        for (const [key, k] of index)
            keyTable.set(key, k * data_keys_1.KEY_BYTES);
        const worker = this.started();
        const id = this.nextId++;
        return new Promise((resolve, reject) => {
            if (this.waiting.size === 0)
                worker.ref();
            this.waiting.set(id, { resolve, reject });
            worker.postMessage({ id, sealed, contexts, keyTable, keyOf });
        });
    }
    async close() {
        this.closed = true;
        await this.worker?.terminate();
    }
    started() {
        if (this.worker)
            return this.worker;
        const worker = new node_worker_threads_1.Worker(SCRIPT);
        const settled = () => {
            if (this.waiting.size === 0)
                worker.unref();
        };
        worker.on('message', ({ id, opened }) => {
            this.waiting.get(id)?.resolve(opened);
            this.waiting.delete(id);
            settled();
        });
        const fail = (error) => {
            if (this.worker !== worker)
                return;
            this.worker = undefined;
            void worker.terminate();
            for (const { reject } of this.waiting.values())
                reject(error);
            this.waiting.clear();
        };
        worker.on('error', fail);
        worker.on('messageerror', fail);
        worker.on('exit', (code) => fail(new Error(`The thread opening sealed values ended (exit code ${code})`)));
        worker.unref();
        this.worker = worker;
        return worker;
    }
}
exports.OpeningThread = OpeningThread;
//# sourceMappingURL=opening-thread.js.map