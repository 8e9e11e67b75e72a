"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.createApp = createApp;
const core_1 = require("@nestjs/core");
const app_module_1 = require("./app.module");
const openapi_1 = require("./docs/openapi");
const access_token_middleware_1 = require("./http/access-token.middleware");
const api_exception_filter_1 = require("./http/api-exception.filter");
const body_validation_pipe_1 = require("./http/body-validation.pipe");
const edge_1 = require("./http/edge");
const json_express_adapter_1 = require("./http/json-express.adapter");
const json_body_middleware_1 = require("./http/json-body.middleware");
const rate_limit_1 = require("./http/rate-limit");
const logging_1 = require("./logging/logging");
const metrics_1 = require("./metrics/metrics");
const V1_PATH = /^\/v1(?:\/|$)/i;
const corsOptions = (origins) => ({
    origin: origins[0] === '*' ? '*' : origins,
    methods: ['GET', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['ETag', 'X-Total-Count', 'X-Request-Id', 'Retry-After'],
    maxAge: 600,
});
async function createApp(config) {
    const logger = (0, logging_1.createLogger)(config.logLevel);
    const adapter = new json_express_adapter_1.JsonExpressAdapter({ ...config, maxConnections: workerShare(config.maxConnections, config) }, logger);
    const app = await core_1.NestFactory.create(app_module_1.AppModule.forRoot(config), adapter, {
        bodyParser: false,
        abortOnError: false,
        logger: new logging_1.NestPinoLogger(logger),
    });
    app.disable('x-powered-by');
    app.set('etag', false);
    app.set('query parser', 'simple');
    app.use((0, edge_1.edgeMiddleware)(logger, app.get(metrics_1.Metrics)));
    if (config.corsOrigins.length > 0)
        app.enableCors(corsOptions(config.corsOrigins));
    const authenticate = (0, access_token_middleware_1.accessTokenMiddleware)(new access_token_middleware_1.AccessTokens(config.accessTokens), rateLimits(config));
    app.use((req, res, next) => V1_PATH.test(req.path) ? authenticate(req, res, (error) => (error ? next(error) : (0, json_body_middleware_1.jsonBody)(req, res, next))) : next());
    app.useGlobalFilters(new api_exception_filter_1.ApiExceptionFilter());
    app.useGlobalPipes(new body_validation_pipe_1.BodyValidationPipe());
    adapter.addAfterRoutes(() => (0, openapi_1.setUpDocs)(app));
    await app.init();
    return app;
}
function workerShare(limit, config) {
    return Math.ceil(limit / config.workers);
}
function rateLimits(config) {
    if (config.rateLimitRequests === 0)
        return undefined;
    const windowMs = config.rateLimitWindowSeconds * 1000;
    const share = (limit) => workerShare(limit, config);
    return {
        perToken: new rate_limit_1.FixedWindowLimiter(share(config.rateLimitRequests), windowMs),
        failedAuthPerAddress: config.rateLimitAuthFailures > 0 ? new rate_limit_1.FixedWindowLimiter(share(config.rateLimitAuthFailures), windowMs) : undefined,
    };
}
//# sourceMappingURL=app.js.map