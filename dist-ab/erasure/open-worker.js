"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
const node_worker_threads_1 = require("node:worker_threads");
const data_keys_1 = require("./data-keys");
node_worker_threads_1.parentPort.on('message', ({ id, sealed, contexts, keyTable, keyOf }) => {
    const keyAt = (k) => (k < 0 ? undefined : keyTable.subarray(k * data_keys_1.KEY_BYTES, (k + 1) * data_keys_1.KEY_BYTES));
    const opened = sealed.map((value, i) => (0, data_keys_1.openOrNull)(keyAt(keyOf[i]), value, contexts[i]));
    node_worker_threads_1.parentPort.postMessage({ id, opened });
});
//# sourceMappingURL=open-worker.js.map