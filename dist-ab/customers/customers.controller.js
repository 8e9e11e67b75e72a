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
exports.CustomersController = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const audit_queries_1 = require("../audit/audit.queries");
const openapi_1 = require("../docs/openapi");
const body_validation_pipe_1 = require("../http/body-validation.pipe");
const envelope_1 = require("../http/envelope");
const etag_1 = require("../http/etag");
const list_query_1 = require("../http/list-query");
const record_id_pipe_1 = require("../http/record-id.pipe");
const request_context_1 = require("../http/request-context");
const idempotent_creates_1 = require("../idempotency/idempotent-creates");
const customer_body_1 = require("./customer.body");
const customer_commands_1 = require("./customer.commands");
const customer_decider_1 = require("./customer.decider");
const customer_projection_1 = require("./customer.projection");
const customer_queries_1 = require("./customer.queries");
const CustomerId = new record_id_pipe_1.RecordIdPipe('Customer');
let CustomersController = class CustomersController {
    constructor(commands, queries, idempotentCreates) {
        this.commands = commands;
        this.queries = queries;
        this.idempotentCreates = idempotentCreates;
    }
    async create(ctx, body, idempotencyKey, res) {
        const fields = (0, body_validation_pipe_1.toFields)(body);
        const created = await this.idempotentCreates.run(ctx, idempotencyKey, { kind: customer_decider_1.CUSTOMER, fields }, async (id) => {
            await this.commands.execute(new customer_commands_1.CreateCustomerCommand(ctx, id, fields));
            const { view, revision } = await this.queries.execute(new customer_queries_1.GetCustomerQuery(ctx.accountId, id, 'full'));
            return { body: (0, envelope_1.envelope)({ Customer: view }, 201), revision };
        });
        (0, etag_1.setETag)(res, created.revision);
        return created.body;
    }
    async list(ctx, query, res) {
        const { customers, total } = await this.queries.execute(new customer_queries_1.ListCustomersQuery(ctx.accountId, (0, list_query_1.parseListQuery)(query, customer_projection_1.CUSTOMER_FILTERS)));
        res.setHeader('X-Total-Count', String(total));
        return (0, envelope_1.envelope)(customers.map((c) => ({ Customer: c })), 200);
    }
    async read(ctx, id, query, res) {
        const { view, revision } = await this.queries.execute(new customer_queries_1.GetCustomerQuery(ctx.accountId, id, 'short', (0, list_query_1.parseAsOf)(query)));
        (0, etag_1.setETag)(res, revision);
        return (0, envelope_1.envelope)([{ Customer: view }], 200);
    }
    async history(ctx, id, query, res) {
        const { entries, total } = await this.queries.execute(new audit_queries_1.RecordHistoryQuery(customer_decider_1.CUSTOMER, ctx.accountId, id, (0, list_query_1.parseListQuery)(query, [], 100)));
        res.setHeader('X-Total-Count', String(total));
        return (0, envelope_1.envelope)(entries, 200);
    }
    async update(ctx, id, body, ifMatch, res) {
        await this.commands.execute(new customer_commands_1.UpdateCustomerCommand(ctx, id, (0, body_validation_pipe_1.toFields)(body), (0, etag_1.parseIfMatch)(ifMatch)));
        const { view, revision } = await this.queries.execute(new customer_queries_1.GetCustomerQuery(ctx.accountId, id, 'short'));
        (0, etag_1.setETag)(res, revision);
        return (0, envelope_1.envelope)({ Customer: view }, 201);
    }
    async remove(ctx, id, ifMatch) {
        await this.commands.execute(new customer_commands_1.DeleteCustomerCommand(ctx, id, (0, etag_1.parseIfMatch)(ifMatch)));
        return (0, envelope_1.envelope)({ Customer: { id } }, 200, 'Customer deleted successfully.');
    }
    async erase(ctx, id) {
        await this.commands.execute(new customer_commands_1.EraseCustomerCommand(ctx, id));
        return (0, envelope_1.envelope)({ Customer: { id } }, 200, 'Customer erased.');
    }
};
exports.CustomersController = CustomersController;
__decorate([
    (0, common_1.Post)(),
    (0, openapi_1.ApiRecordOperation)('Customer', 'create'),
    (0, common_1.HttpCode)(201),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Body)()),
    __param(2, (0, common_1.Headers)('idempotency-key')),
    __param(3, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, customer_body_1.CreateCustomerBody, Object, Object]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "create", null);
__decorate([
    (0, common_1.Get)(),
    (0, openapi_1.ApiRecordOperation)('Customer', 'list'),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Query)()),
    __param(2, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, Object, Object]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "list", null);
__decorate([
    (0, common_1.Get)(':id'),
    (0, openapi_1.ApiRecordOperation)('Customer', 'read'),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', CustomerId)),
    __param(2, (0, common_1.Query)()),
    __param(3, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, Object, Object]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "read", null);
__decorate([
    (0, common_1.Get)(':id/history'),
    (0, openapi_1.ApiRecordOperation)('Customer', 'history'),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', CustomerId)),
    __param(2, (0, common_1.Query)()),
    __param(3, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, Object, Object]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "history", null);
__decorate([
    (0, common_1.Put)(':id'),
    (0, openapi_1.ApiRecordOperation)('Customer', 'update'),
    (0, common_1.HttpCode)(200),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', CustomerId)),
    __param(2, (0, common_1.Body)()),
    __param(3, (0, common_1.Headers)('if-match')),
    __param(4, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, customer_body_1.UpdateCustomerBody, Object, Object]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "update", null);
__decorate([
    (0, common_1.Delete)(':id'),
    (0, openapi_1.ApiRecordOperation)('Customer', 'delete'),
    (0, common_1.HttpCode)(200),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', CustomerId)),
    __param(2, (0, common_1.Headers)('if-match')),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, Object]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "remove", null);
__decorate([
    (0, common_1.Post)(':id/erase'),
    (0, openapi_1.ApiRecordOperation)('Customer', 'erase'),
    (0, common_1.HttpCode)(200),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', CustomerId)),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String]),
    __metadata("design:returntype", Promise)
], CustomersController.prototype, "erase", null);
exports.CustomersController = CustomersController = __decorate([
    (0, openapi_1.ApiResource)('Customer'),
    (0, common_1.Controller)('v1/customers'),
    __metadata("design:paramtypes", [cqrs_1.CommandBus,
        cqrs_1.QueryBus,
        idempotent_creates_1.IdempotentCreates])
], CustomersController);
//# sourceMappingURL=customers.controller.js.map