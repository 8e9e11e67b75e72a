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
exports.ProfilesController = void 0;
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
const profile_body_1 = require("./profile.body");
const profile_commands_1 = require("./profile.commands");
const profile_decider_1 = require("./profile.decider");
const profile_projection_1 = require("./profile.projection");
const profile_queries_1 = require("./profile.queries");
const ProfileId = new record_id_pipe_1.RecordIdPipe('Profile');
let ProfilesController = class ProfilesController {
    constructor(commands, queries, idempotentCreates) {
        this.commands = commands;
        this.queries = queries;
        this.idempotentCreates = idempotentCreates;
    }
    async create(ctx, body, idempotencyKey, res) {
        const fields = (0, body_validation_pipe_1.toFields)(body);
        const created = await this.idempotentCreates.run(ctx, idempotencyKey, { kind: profile_decider_1.PROFILE, fields }, async (id) => {
            await this.commands.execute(new profile_commands_1.CreateProfileCommand(ctx, id, fields));
            const { view, revision } = await this.queries.execute(new profile_queries_1.GetProfileQuery(ctx.accountId, id));
            return { body: (0, envelope_1.envelope)({ Profile: view }, 201), revision };
        });
        (0, etag_1.setETag)(res, created.revision);
        return created.body;
    }
    async list(ctx, query, res) {
        const { profiles, total } = await this.queries.execute(new profile_queries_1.ListProfilesQuery(ctx.accountId, (0, list_query_1.parseListQuery)(query, profile_projection_1.PROFILE_FILTERS)));
        res.setHeader('X-Total-Count', String(total));
        return (0, envelope_1.envelope)(profiles.map((p) => ({ Profile: p })), 200);
    }
    async read(ctx, id, query, res) {
        const { view, revision } = await this.queries.execute(new profile_queries_1.GetProfileQuery(ctx.accountId, id, (0, list_query_1.parseAsOf)(query)));
        (0, etag_1.setETag)(res, revision);
        return (0, envelope_1.envelope)([{ Profile: view }], 200);
    }
    async history(ctx, id, query, res) {
        const { entries, total } = await this.queries.execute(new audit_queries_1.RecordHistoryQuery(profile_decider_1.PROFILE, ctx.accountId, id, (0, list_query_1.parseListQuery)(query, [], 100)));
        res.setHeader('X-Total-Count', String(total));
        return (0, envelope_1.envelope)(entries, 200);
    }
    async update(ctx, id, body, ifMatch, res) {
        await this.commands.execute(new profile_commands_1.UpdateProfileCommand(ctx, id, (0, body_validation_pipe_1.toFields)(body), (0, etag_1.parseIfMatch)(ifMatch)));
        const { view, revision } = await this.queries.execute(new profile_queries_1.GetProfileQuery(ctx.accountId, id));
        (0, etag_1.setETag)(res, revision);
        return (0, envelope_1.envelope)({ Profile: view }, 201);
    }
    async remove(ctx, id, ifMatch) {
        await this.commands.execute(new profile_commands_1.DeleteProfileCommand(ctx, id, (0, etag_1.parseIfMatch)(ifMatch)));
        return (0, envelope_1.envelope)({ Profile: { id } }, 200, 'Profile deleted successfully.');
    }
    async erase(ctx, id) {
        await this.commands.execute(new profile_commands_1.EraseProfileCommand(ctx, id));
        return (0, envelope_1.envelope)({ Profile: { id } }, 200, 'Profile erased.');
    }
};
exports.ProfilesController = ProfilesController;
__decorate([
    (0, common_1.Post)(),
    (0, openapi_1.ApiRecordOperation)('Profile', 'create'),
    (0, common_1.HttpCode)(201),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Body)()),
    __param(2, (0, common_1.Headers)('idempotency-key')),
    __param(3, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, profile_body_1.ProfileBody, Object, Object]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "create", null);
__decorate([
    (0, common_1.Get)(),
    (0, openapi_1.ApiRecordOperation)('Profile', 'list'),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Query)()),
    __param(2, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, Object, Object]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "list", null);
__decorate([
    (0, common_1.Get)(':id'),
    (0, openapi_1.ApiRecordOperation)('Profile', 'read'),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', ProfileId)),
    __param(2, (0, common_1.Query)()),
    __param(3, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, Object, Object]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "read", null);
__decorate([
    (0, common_1.Get)(':id/history'),
    (0, openapi_1.ApiRecordOperation)('Profile', 'history'),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', ProfileId)),
    __param(2, (0, common_1.Query)()),
    __param(3, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, Object, Object]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "history", null);
__decorate([
    (0, common_1.Put)(':id'),
    (0, openapi_1.ApiRecordOperation)('Profile', 'update'),
    (0, common_1.HttpCode)(200),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', ProfileId)),
    __param(2, (0, common_1.Body)()),
    __param(3, (0, common_1.Headers)('if-match')),
    __param(4, (0, common_1.Res)({ passthrough: true })),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, profile_body_1.ProfileBody, Object, Object]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "update", null);
__decorate([
    (0, common_1.Delete)(':id'),
    (0, openapi_1.ApiRecordOperation)('Profile', 'delete'),
    (0, common_1.HttpCode)(200),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', ProfileId)),
    __param(2, (0, common_1.Headers)('if-match')),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String, Object]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "remove", null);
__decorate([
    (0, common_1.Post)(':id/erase'),
    (0, openapi_1.ApiRecordOperation)('Profile', 'erase'),
    (0, common_1.HttpCode)(200),
    __param(0, (0, request_context_1.Ctx)()),
    __param(1, (0, common_1.Param)('id', ProfileId)),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [Object, String]),
    __metadata("design:returntype", Promise)
], ProfilesController.prototype, "erase", null);
exports.ProfilesController = ProfilesController = __decorate([
    (0, openapi_1.ApiResource)('Profile'),
    (0, common_1.Controller)('v1/profiles'),
    __metadata("design:paramtypes", [cqrs_1.CommandBus,
        cqrs_1.QueryBus,
        idempotent_creates_1.IdempotentCreates])
], ProfilesController);
//# sourceMappingURL=profiles.controller.js.map