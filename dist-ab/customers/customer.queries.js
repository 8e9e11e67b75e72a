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
exports.ListCustomersHandler = exports.GetCustomerHandler = exports.ListCustomersQuery = exports.GetCustomerQuery = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const audit_queries_1 = require("../audit/audit.queries");
const errors_1 = require("../errors");
const read_store_port_1 = require("../read-store/read-store.port");
const customer_decider_1 = require("./customer.decider");
const customer_projection_1 = require("./customer.projection");
const customer_view_1 = require("./customer.view");
const COLLECTION = customer_projection_1.customerProjection.schema.name;
class GetCustomerQuery extends cqrs_1.Query {
    constructor(accountId, id, shape, asOf) {
        super();
        this.accountId = accountId;
        this.id = id;
        this.shape = shape;
        this.asOf = asOf;
    }
}
exports.GetCustomerQuery = GetCustomerQuery;
class ListCustomersQuery extends cqrs_1.Query {
    constructor(accountId, list) {
        super();
        this.accountId = accountId;
        this.list = list;
    }
}
exports.ListCustomersQuery = ListCustomersQuery;
let GetCustomerHandler = class GetCustomerHandler {
    constructor(readStore, queries) {
        this.readStore = readStore;
        this.queries = queries;
    }
    async execute({ accountId, id, shape, asOf }) {
        const customer = asOf === undefined
            ? await this.readStore.get(COLLECTION, accountId, id)
            : await this.queries.execute(new audit_queries_1.RecordAsOfQuery(customer_decider_1.CUSTOMER, accountId, id, asOf));
        if (!customer)
            throw (0, errors_1.notFound)('Customer');
        return { view: (0, customer_view_1.customerView)(customer, shape), revision: customer.revision };
    }
};
exports.GetCustomerHandler = GetCustomerHandler;
exports.GetCustomerHandler = GetCustomerHandler = __decorate([
    (0, cqrs_1.QueryHandler)(GetCustomerQuery),
    __param(0, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __metadata("design:paramtypes", [Object, cqrs_1.QueryBus])
], GetCustomerHandler);
let ListCustomersHandler = class ListCustomersHandler {
    constructor(readStore) {
        this.readStore = readStore;
    }
    async execute({ accountId, list }) {
        const { documents, total } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
        return { customers: documents.map((c) => (0, customer_view_1.customerView)(c, 'short')), total };
    }
};
exports.ListCustomersHandler = ListCustomersHandler;
exports.ListCustomersHandler = ListCustomersHandler = __decorate([
    (0, cqrs_1.QueryHandler)(ListCustomersQuery),
    __param(0, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __metadata("design:paramtypes", [Object])
], ListCustomersHandler);
//# sourceMappingURL=customer.queries.js.map