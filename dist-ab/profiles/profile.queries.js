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
exports.ListProfilesHandler = exports.GetProfileHandler = exports.ListProfilesQuery = exports.GetProfileQuery = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const audit_queries_1 = require("../audit/audit.queries");
const errors_1 = require("../errors");
const read_store_port_1 = require("../read-store/read-store.port");
const profile_decider_1 = require("./profile.decider");
const profile_projection_1 = require("./profile.projection");
const profile_view_1 = require("./profile.view");
const COLLECTION = profile_projection_1.profileProjection.schema.name;
class GetProfileQuery extends cqrs_1.Query {
    constructor(accountId, id, asOf) {
        super();
        this.accountId = accountId;
        this.id = id;
        this.asOf = asOf;
    }
}
exports.GetProfileQuery = GetProfileQuery;
class ListProfilesQuery extends cqrs_1.Query {
    constructor(accountId, list) {
        super();
        this.accountId = accountId;
        this.list = list;
    }
}
exports.ListProfilesQuery = ListProfilesQuery;
async function defaultProfileId(readStore, accountId) {
    return (await readStore.oldest(COLLECTION, accountId))?.id;
}
let GetProfileHandler = class GetProfileHandler {
    constructor(readStore, queries) {
        this.readStore = readStore;
        this.queries = queries;
    }
    async execute({ accountId, id, asOf }) {
        const profile = asOf === undefined
            ? await this.readStore.get(COLLECTION, accountId, id)
            : await this.queries.execute(new audit_queries_1.RecordAsOfQuery(profile_decider_1.PROFILE, accountId, id, asOf));
        if (!profile)
            throw (0, errors_1.notFound)('Profile');
        const isDefault = (await defaultProfileId(this.readStore, accountId)) === id;
        return { view: (0, profile_view_1.profileView)(profile, isDefault), revision: profile.revision };
    }
};
exports.GetProfileHandler = GetProfileHandler;
exports.GetProfileHandler = GetProfileHandler = __decorate([
    (0, cqrs_1.QueryHandler)(GetProfileQuery),
    __param(0, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __metadata("design:paramtypes", [Object, cqrs_1.QueryBus])
], GetProfileHandler);
let ListProfilesHandler = class ListProfilesHandler {
    constructor(readStore) {
        this.readStore = readStore;
    }
    async execute({ accountId, list }) {
        const { documents, total } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
        const defaultId = documents.length ? await defaultProfileId(this.readStore, accountId) : undefined;
        return { profiles: documents.map((p) => (0, profile_view_1.profileView)(p, p.id === defaultId)), total };
    }
};
exports.ListProfilesHandler = ListProfilesHandler;
exports.ListProfilesHandler = ListProfilesHandler = __decorate([
    (0, cqrs_1.QueryHandler)(ListProfilesQuery),
    __param(0, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __metadata("design:paramtypes", [Object])
], ListProfilesHandler);
//# sourceMappingURL=profile.queries.js.map