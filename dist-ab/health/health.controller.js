"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
var __param = (this && this.__param) || function (paramIndex, decorator) {
    return function (target, key) { decorator(target, key, paramIndex); }
};
var HealthController_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.HealthController = void 0;
const common_1 = require("@nestjs/common");
const swagger_1 = require("@nestjs/swagger");
const examples_1 = require("../docs/examples");
const openapi_1 = require("../docs/openapi");
const config_1 = require("../config/config");
const event_store_port_1 = require("../event-store/event-store.port");
const json_response_1 = require("../http/json-response");
const positions_1 = require("../projections/positions");
const projector_1 = require("../projections/projector");
const projections_service_1 = require("../projections/projections.service");
const read_store_port_1 = require("../read-store/read-store.port");
const READINESS = {
    type: 'object',
    additionalProperties: false,
    required: ['status', 'head', 'projections', 'problems'],
    properties: {
        status: { type: 'string', enum: ['ready', 'unavailable'] },
        head: { type: 'string', nullable: true, description: "the event store's newest position; null when it is unreachable" },
        projections: {
            type: 'array',
            items: {
                type: 'object',
                additionalProperties: false,
                required: ['name', 'state', 'folding', 'checkpoint', 'lag', 'failure'],
                properties: {
                    name: { type: 'string' },
                    state: { type: 'string', enum: ['starting', 'running', 'failed', 'stopped'] },
                    folding: { type: 'boolean', description: 'true on the one instance that holds the lease and folds; false on those that follow it' },
                    checkpoint: { type: 'string', description: 'the position of the last event folded; "0" before any' },
                    lag: { type: 'integer', nullable: true, description: 'events behind the head' },
                    failure: {
                        type: 'object',
                        nullable: true,
                        description: 'the event it stopped on, if it met one it cannot fold',
                        required: ['streamId', 'revision', 'error'],
                        properties: { streamId: { type: 'string' }, revision: { type: 'integer' }, error: { type: 'string' } },
                    },
                },
            },
        },
        problems: { type: 'array', items: { type: 'string' }, description: 'each reason it is not ready; empty when ready' },
    },
};
let HealthController = HealthController_1 = class HealthController {
    constructor(projections, eventStore, readStore, config) {
        this.projections = projections;
        this.eventStore = eventStore;
        this.readStore = readStore;
        this.config = config;
        this.logger = new common_1.Logger(HealthController_1.name);
    }
    live() {
        return { status: 'ok' };
    }
    async ready(res) {
        const problems = [];
        const head = await this.ping('event store', problems, () => this.eventStore.headPosition());
        await this.ping('read store', problems, () => Promise.all(this.projections.projectors.map((p) => this.readStore.status(p.projection.schema.name))));
        const projections = this.projections.projectors.map((p) => {
            const lag = head ? this.eventStore.eventsBetween(p.checkpoint, head) : null;
            const failure = p.failure instanceof projector_1.PoisonEventError
                ? { streamId: p.failure.streamId, revision: p.failure.revision, error: p.failure.reason }
                : null;
            if (failure)
                problems.push(`projection ${p.projection.name} stopped on ${failure.streamId}@${failure.revision}`);
            else if (p.state !== 'running')
                problems.push(`projection ${p.projection.name} is ${p.state}`);
            if (lag !== null && lag > this.config.readyMaxLagEvents) {
                problems.push(`projection ${p.projection.name} is ${lag} events behind (bound ${this.config.readyMaxLagEvents})`);
            }
            return { name: p.projection.name, state: p.state, folding: p.folding, checkpoint: (0, positions_1.formatPosition)(p.checkpoint), lag, failure };
        });
        const ready = problems.length === 0;
        (0, json_response_1.sendJson)(res, ready ? 200 : 503, {
            status: ready ? 'ready' : 'unavailable',
            head: head ? (0, positions_1.formatPosition)(head) : null,
            projections,
            problems,
        });
    }
    async ping(store, problems, call) {
        try {
            return await call();
        }
        catch (error) {
            this.logger.warn(`Readiness: ${store} unreachable: ${error.message}`);
            problems.push(`${store} unreachable`);
            return null;
        }
    }
};
exports.HealthController = HealthController;
__decorate([
    (0, common_1.Get)('live'),
    (0, swagger_1.ApiOperation)({ summary: 'Liveness: the process is up', description: 'No token. Always 200 while the process answers.' }),
    (0, swagger_1.ApiResponse)({
        status: 200,
        description: 'the process is up',
        content: { 'application/json; charset=UTF-8': { schema: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } }, example: { status: 'ok' } } },
    }),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", []),
    __metadata("design:returntype", void 0)
], HealthController.prototype, "live", null);
__decorate([
    (0, common_1.Get)('ready'),
    (0, swagger_1.ApiOperation)({
        summary: 'Readiness: both stores answer and the read models are caught up',
        description: 'No token. 503 while a store is unreachable, a read model has stopped, or one is more than READY_MAX_LAG_EVENTS behind; problems names each.',
    }),
    (0, swagger_1.ApiResponse)({ status: 200, description: 'ready to serve', content: { 'application/json; charset=UTF-8': { schema: READINESS, example: examples_1.READY } } }),
    (0, swagger_1.ApiResponse)({ status: 503, description: 'not ready: see problems', content: { 'application/json; charset=UTF-8': { schema: READINESS, example: examples_1.NOT_READY } } }),
    __param(0, (0, common_1.Res)()),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object]),
    __metadata("design:returntype", Promise)
], HealthController.prototype, "ready", null);
exports.HealthController = HealthController = HealthController_1 = __decorate([
    (0, openapi_1.ApiOperations)(),
    (0, common_1.Controller)('health'),
    __param(1, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __param(2, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __param(3, (0, common_1.Inject)(config_1.APP_CONFIG)),
    __metadata("design:paramtypes", [projections_service_1.ProjectionsService, Object, Object, Object])
], HealthController);
//# sourceMappingURL=health.controller.js.map