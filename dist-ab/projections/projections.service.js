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
var ProjectionsService_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.ProjectionsService = void 0;
const common_1 = require("@nestjs/common");
const config_1 = require("../config/config");
const errors_1 = require("../errors");
const event_store_port_1 = require("../event-store/event-store.port");
const read_store_port_1 = require("../read-store/read-store.port");
const projection_1 = require("./projection");
const projector_1 = require("./projector");
const rebuild_1 = require("./rebuild");
const CATCH_UP_GRACE_MS = 1000;
const CATCH_UP_BY_REBUILD_EVENTS = 10_000;
let ProjectionsService = ProjectionsService_1 = class ProjectionsService {
    constructor(projections, eventStore, readStore, config) {
        this.eventStore = eventStore;
        this.readStore = readStore;
        this.config = config;
        this.logger = new common_1.Logger(ProjectionsService_1.name);
        this.stopping = new AbortController();
        const lease = { holder: config.instanceId, ttlMs: config.projectionLeaseMs };
        this.projectors = projections.map((p) => new projector_1.Projector(p, eventStore, readStore, lease));
    }
    async onApplicationBootstrap() {
        const head = await this.eventStore.headPosition();
        const behind = [];
        for (const projector of this.projectors) {
            const { name } = projector.projection.schema;
            await this.readStore.ensureCollection(projector.projection.schema);
            await this.readStore.dropRetired(name, rebuild_1.REBUILD_GRACE_MS);
            const { live } = await this.readStore.status(name);
            if (this.farBehind(live.position, head) && (await projector.takeLease().catch(() => false)))
                behind.push(projector);
        }
        await Promise.all(this.projectors.filter((p) => !behind.includes(p)).map((p) => p.start()));
        if (behind.length)
            this.catchingUp = this.catchUpByRebuild(behind);
    }
    farBehind(position, head) {
        const lag = this.eventStore.eventsBetween(position ?? event_store_port_1.START, head);
        return lag === null ? position === null && (0, event_store_port_1.comparePositions)(head, event_store_port_1.START) > 0 : lag > CATCH_UP_BY_REBUILD_EVENTS;
    }
    async onModuleDestroy() {
        this.stopping.abort();
        await this.catchingUp;
        await Promise.all(this.projectors.map((p) => p.stop()));
    }
    async catchUpByRebuild(projectors) {
        const names = projectors.map((p) => p.projection.name).join(', ');
        this.logger.log(`Read models far behind the events: catching up ${names} by a rebuild`);
        const started = Date.now();
        const renew = setInterval(() => {
            for (const p of projectors)
                if (p.state === 'starting')
                    p.takeLease().catch(() => undefined);
        }, this.config.projectionLeaseMs / 3);
        try {
            const results = await (0, rebuild_1.rebuildProjections)(projectors.map((p) => p.projection), this.eventStore, this.readStore, {
                signal: this.stopping.signal,
                graceMs: CATCH_UP_GRACE_MS,
                onPromoted: (projection) => projectors.find((p) => p.projection === projection).start(),
            });
            const events = Math.max(...results.map((r) => r.events));
            this.logger.log(`Caught up ${names} from ${events} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        }
        catch (error) {
            if (this.stopping.signal.aborted)
                return;
            this.logger.error(`Catching up ${names} by a rebuild failed: ${error.message}`);
            await Promise.all(projectors.filter((p) => p.state === 'starting').map((p) => p.start()));
        }
        finally {
            clearInterval(renew);
        }
    }
    async waitFor(streamId, position) {
        const following = this.projectors.filter((p) => streamId.startsWith(p.streamPrefix));
        try {
            await Promise.all(following.map((p) => p.waitFor(position, this.config.readYourWritesTimeoutMs)));
        }
        catch (error) {
            this.logger.warn(`Read models behind a write: ${error.message}`);
            throw new errors_1.ApiError('UNAVAILABLE', 'The change was saved, but the read models have not caught up with it yet. Read it again shortly.', undefined, 1);
        }
    }
};
exports.ProjectionsService = ProjectionsService;
exports.ProjectionsService = ProjectionsService = ProjectionsService_1 = __decorate([
    (0, common_1.Injectable)(),
    __param(0, (0, common_1.Inject)(projection_1.PROJECTIONS)),
    __param(1, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __param(2, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __param(3, (0, common_1.Inject)(config_1.APP_CONFIG)),
    __metadata("design:paramtypes", [Array, Object, Object, Object])
], ProjectionsService);
//# sourceMappingURL=projections.service.js.map