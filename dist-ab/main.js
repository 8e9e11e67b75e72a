"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
require("reflect-metadata");
const common_1 = require("@nestjs/common");
const node_cluster_1 = __importDefault(require("node:cluster"));
const node_net_1 = require("node:net");
const app_1 = require("./app");
const config_1 = require("./config/config");
const instance_1 = require("./instance");
const logging_1 = require("./logging/logging");
const storage_module_1 = require("./storage/storage.module");
const store_unavailable_error_1 = require("./storage/store-unavailable.error");
const SHUTDOWN_GRACE_MS = 10_000;
function drainOnShutdown(server) {
    const open = new Set();
    let closing = false;
    server.prependListener('request', (_req, res) => {
        if (closing)
            return void res.setHeader('Connection', 'close');
        open.add(res);
        res.once('close', () => open.delete(res));
    });
    return (graceMs) => new Promise((resolve) => {
        closing = true;
        for (const res of open)
            if (!res.headersSent)
                res.setHeader('Connection', 'close');
        setTimeout(resolve, graceMs).unref();
        server.close(() => resolve());
        server.closeIdleConnections();
    });
}
class StartError extends Error {
}
const portInUse = (port) => new StartError(`port ${port} is in use; set PORT (0 picks a free one)`);
function ensurePortFree(port, host) {
    if (port === 0)
        return Promise.resolve();
    return new Promise((resolve, reject) => {
        const probe = (0, node_net_1.createServer)();
        probe.once('error', (error) => reject(error.code === 'EADDRINUSE' ? portInUse(port) : new StartError(`cannot listen on port ${port}: ${error.message}`)));
        probe.listen(port, host, () => probe.close(() => resolve()));
    });
}
function announceToken(logger, created, dataDir, url) {
    if (created) {
        logger.log(`No ACCESS_TOKENS configured: made an access token for account "default" and kept it in ${dataDir}/access-token ` +
            `(readable by this user only; the part before ":default" is the token). Try it: curl -H "Authorization: Bearer $(cut -d: -f1 ${dataDir}/access-token)" ${url}/v1/profiles`);
    }
    else if (!process.env.ACCESS_TOKENS) {
        logger.log(`Using the access token kept in ${dataDir}/access-token`);
    }
}
async function main() {
    const settings = (0, config_1.loadConfig)();
    if (node_cluster_1.default.isPrimary && settings.workers > 1)
        return runPrimary(settings);
    if (node_cluster_1.default.isPrimary)
        await ensurePortFree(settings.port, settings.host);
    const { tokens, created } = (0, config_1.resolveAccessTokens)(process.env, settings.dataDir);
    const app = await (0, app_1.createApp)({ ...settings, accessTokens: tokens });
    const logger = new common_1.Logger('Main');
    const stopAccepting = drainOnShutdown(app.getHttpServer());
    let stopping = false;
    const shutDown = (reason) => {
        if (stopping)
            return;
        stopping = true;
        logger.log(`Shutting down on ${reason}: finishing the requests in flight (at most ${SHUTDOWN_GRACE_MS} ms)`);
        stopAccepting(SHUTDOWN_GRACE_MS).then(() => app.close()).then(() => {
            logger.log('Stopped');
            process.exit(0);
        }, (error) => {
            logger.error('Shutdown failed', error?.stack ?? String(error));
            process.exit(1);
        });
    };
    for (const signal of ['SIGTERM', 'SIGINT'])
        process.once(signal, () => shutDown(signal));
    if (node_cluster_1.default.isWorker)
        process.once('disconnect', () => shutDown('the loss of its primary'));
    await (settings.host ? app.listen(settings.port, settings.host) : app.listen(settings.port)).catch((error) => {
        throw error?.code === 'EADDRINUSE' ? portInUse(settings.port) : error;
    });
    const url = (await app.getUrl()).replace('[::1]', 'localhost').replace('[::]', 'localhost');
    logger[settings.logLevel === 'warn' ? 'warn' : 'log'](`Listening on ${url} (data in ${settings.dataDir})`);
    if (node_cluster_1.default.isWorker)
        process.send({ listening: url });
    if (node_cluster_1.default.isPrimary)
        announceToken(logger, created, settings.dataDir, url);
}
async function runPrimary(settings) {
    common_1.Logger.overrideLogger(new logging_1.NestPinoLogger((0, logging_1.createLogger)(settings.logLevel)));
    await ensurePortFree(settings.port, settings.host);
    const { created } = (0, config_1.resolveAccessTokens)(process.env, settings.dataDir);
    (0, storage_module_1.prepareSqliteFiles)(settings);
    const logger = new common_1.Logger('Primary');
    const listening = new Set();
    const alive = new Set();
    const fork = () => alive.add(node_cluster_1.default.fork().id);
    let stopping = false;
    let failed = false;
    const stopAll = (code) => {
        if (stopping)
            return;
        stopping = true;
        failed = code !== 0;
        for (const worker of Object.values(node_cluster_1.default.workers ?? {}))
            worker?.process.kill('SIGTERM');
        setTimeout(() => {
            for (const worker of Object.values(node_cluster_1.default.workers ?? {}))
                worker?.process.kill('SIGKILL');
        }, SHUTDOWN_GRACE_MS + 5_000).unref();
    };
    (0, instance_1.relaySiblingNews)();
    node_cluster_1.default.on('message', (worker, message) => {
        if (typeof message?.listening !== 'string')
            return;
        const first = listening.size === 0;
        listening.add(worker.id);
        if (first)
            announceToken(logger, created, settings.dataDir, message.listening);
        if (listening.size === settings.workers)
            logger.log(`${settings.workers} workers serve ${message.listening}`);
    });
    node_cluster_1.default.on('exit', (worker, code, signal) => {
        alive.delete(worker.id);
        const started = listening.delete(worker.id);
        if (!stopping) {
            if (!started) {
                logger.error(`Worker ${worker.process.pid} stopped before it listened (exit code ${code}): stopping the service`);
                return stopAll(1);
            }
            logger.warn(`Worker ${worker.process.pid} died (${signal ?? `exit code ${code}`}): starting another`);
            fork();
        }
        if (stopping && alive.size === 0) {
            logger.log('Stopped');
            process.exit(failed ? 1 : 0);
        }
    });
    for (const signal of ['SIGTERM', 'SIGINT']) {
        process.once(signal, () => {
            logger.log(`Shutting down on ${signal}: stopping ${alive.size} workers`);
            stopAll(0);
        });
    }
    for (let n = 0; n < settings.workers; n++)
        fork();
}
main().catch((error) => {
    const message = error instanceof config_1.ConfigError
        ? `Configuration error: ${error.message}`
        : error instanceof StartError || error instanceof store_unavailable_error_1.StoreUnavailableError
            ? `Cannot start: ${error.message}`
            : error?.stack ?? String(error);
    process.stderr.write(`${message}\n`);
    process.exit(1);
});
//# sourceMappingURL=main.js.map