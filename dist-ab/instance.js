"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.siblings = void 0;
exports.newInstanceId = newInstanceId;
exports.isGoneFromThisMachine = isGoneFromThisMachine;
exports.relaySiblingNews = relaySiblingNews;
const node_cluster_1 = __importDefault(require("node:cluster"));
const node_crypto_1 = require("node:crypto");
const node_os_1 = require("node:os");
function newInstanceId() {
    return `${(0, node_os_1.hostname)()}:${process.pid}:${(0, node_crypto_1.randomBytes)(3).toString('hex')}`;
}
function isGoneFromThisMachine(instanceId) {
    const [host, pid] = instanceId.split(':');
    if (host !== (0, node_os_1.hostname)() || !/^\d+$/.test(pid ?? '') || Number(pid) === process.pid)
        return false;
    try {
        process.kill(Number(pid), 0);
        return false;
    }
    catch (error) {
        return error.code === 'ESRCH';
    }
}
const NEWS = 'siblingNews';
const ignoreFailure = () => undefined;
exports.siblings = {
    tell(news) {
        if (node_cluster_1.default.isWorker && process.connected)
            process.send({ [NEWS]: news }, undefined, undefined, ignoreFailure);
    },
    hear(news, listener) {
        if (!node_cluster_1.default.isWorker)
            return () => undefined;
        const onMessage = (message) => {
            if (message?.[NEWS] === news)
                listener();
        };
        process.on('message', onMessage);
        return () => void process.off('message', onMessage);
    },
};
function relaySiblingNews() {
    node_cluster_1.default.on('message', (from, message) => {
        if (typeof message?.[NEWS] !== 'string')
            return;
        for (const worker of Object.values(node_cluster_1.default.workers ?? {})) {
            if (worker && worker.id !== from.id && worker.isConnected())
                worker.send(message, undefined, ignoreFailure);
        }
    });
}
//# sourceMappingURL=instance.js.map