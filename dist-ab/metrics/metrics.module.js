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
Object.defineProperty(exports, "__esModule", { value: true });
exports.MetricsModule = exports.MetricsController = void 0;
const common_1 = require("@nestjs/common");
const swagger_1 = require("@nestjs/swagger");
const config_1 = require("../config/config");
const openapi_1 = require("../docs/openapi");
const event_store_port_1 = require("../event-store/event-store.port");
const projections_service_1 = require("../projections/projections.service");
const metrics_1 = require("./metrics");
let MetricsController = class MetricsController {
    constructor(metrics, projections, eventStore) {
        this.metrics = metrics;
        this.projections = projections;
        this.eventStore = eventStore;
    }
    async scrape(res) {
        const head = await this.eventStore.headPosition();
        for (const projector of this.projections.projectors) {
            const labels = { projection: projector.projection.name };
            const checkpoint = projector.checkpoint.commit;
            this.metrics.projectionCheckpoint.set(labels, Number(checkpoint));
            this.metrics.projectionFolding.set(labels, projector.folding ? 1 : 0);
            const lag = this.eventStore.eventsBetween(projector.checkpoint, head);
            if (lag === null)
                this.metrics.projectionLag.remove(labels);
            else
                this.metrics.projectionLag.set(labels, lag);
        }
        const text = await this.metrics.registry.metrics();
        res.status(200).setHeader('Content-Type', this.metrics.registry.contentType);
        res.end(text);
    }
};
exports.MetricsController = MetricsController;
__decorate([
    (0, common_1.Get)(),
    (0, swagger_1.ApiOperation)({ summary: 'Prometheus metrics', description: 'No token. The metrics are listed in docs/operators.md.' }),
    (0, swagger_1.ApiResponse)({
        status: 200,
        description: 'Prometheus text format 0.0.4',
        content: {
            'text/plain; version=0.0.4; charset=utf-8': {
                schema: { type: 'string' },
                example: '# HELP http_requests_total HTTP requests answered, by method, route template and status\n# TYPE http_requests_total counter\n' +
                    'http_requests_total{method="GET",route="/v1/customers",status="200",service_instance="host-1:4242:5f3a9c"} 1532\n' +
                    "# HELP projection_lag How far the projection's checkpoint is behind the event store's newest event, in commit positions (events, for SQLite)\n# TYPE projection_lag gauge\nprojection_lag{projection=\"customers\",service_instance=\"host-1:4242:5f3a9c\"} 0\n",
            },
        },
    }),
    __param(0, (0, common_1.Res)()),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object]),
    __metadata("design:returntype", Promise)
], MetricsController.prototype, "scrape", null);
exports.MetricsController = MetricsController = __decorate([
    (0, openapi_1.ApiOperations)(),
    (0, common_1.Controller)('metrics'),
    __param(2, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __metadata("design:paramtypes", [metrics_1.Metrics,
        projections_service_1.ProjectionsService, Object])
], MetricsController);
let MetricsModule = class MetricsModule {
};
exports.MetricsModule = MetricsModule;
exports.MetricsModule = MetricsModule = __decorate([
    (0, common_1.Global)(),
    (0, common_1.Module)({
        controllers: [MetricsController],
        providers: [{ provide: metrics_1.Metrics, useFactory: (config) => new metrics_1.Metrics(config.instanceId), inject: [config_1.APP_CONFIG] }],
        exports: [metrics_1.Metrics],
    })
], MetricsModule);
//# sourceMappingURL=metrics.module.js.map