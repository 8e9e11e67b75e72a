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
exports.RecordAsOfHandler = exports.RecordHistoryHandler = exports.RecordAsOfQuery = exports.RecordHistoryQuery = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const errors_1 = require("../errors");
const event_store_port_1 = require("../event-store/event-store.port");
const record_1 = require("../records/record");
const record_history_1 = require("./record-history");
class RecordHistoryQuery extends cqrs_1.Query {
    constructor(kind, accountId, id, page) {
        super();
        this.kind = kind;
        this.accountId = accountId;
        this.id = id;
        this.page = page;
    }
}
exports.RecordHistoryQuery = RecordHistoryQuery;
class RecordAsOfQuery extends cqrs_1.Query {
    constructor(kind, accountId, id, asOf) {
        super();
        this.kind = kind;
        this.accountId = accountId;
        this.id = id;
        this.asOf = asOf;
    }
}
exports.RecordAsOfQuery = RecordAsOfQuery;
let RecordHistoryHandler = class RecordHistoryHandler {
    constructor(eventStore) {
        this.eventStore = eventStore;
    }
    async execute({ kind, accountId, id, page }) {
        const events = await this.eventStore.readStream((0, record_1.streamIdOf)(kind, id));
        if (events[0]?.metadata.accountId !== accountId)
            throw (0, errors_1.notFound)(kind.label);
        const entries = (0, record_history_1.recordHistory)(kind, events).slice(page.offset, page.offset + page.limit);
        return { entries, total: events.length };
    }
};
exports.RecordHistoryHandler = RecordHistoryHandler;
exports.RecordHistoryHandler = RecordHistoryHandler = __decorate([
    (0, cqrs_1.QueryHandler)(RecordHistoryQuery),
    __param(0, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __metadata("design:paramtypes", [Object])
], RecordHistoryHandler);
let RecordAsOfHandler = class RecordAsOfHandler {
    constructor(eventStore) {
        this.eventStore = eventStore;
    }
    async execute({ kind, accountId, id, asOf }) {
        const events = await this.eventStore.readStream((0, record_1.streamIdOf)(kind, id));
        return (0, record_1.ownedRecord)(kind, (0, record_history_1.recordAsOf)(kind, events, asOf), accountId);
    }
};
exports.RecordAsOfHandler = RecordAsOfHandler;
exports.RecordAsOfHandler = RecordAsOfHandler = __decorate([
    (0, cqrs_1.QueryHandler)(RecordAsOfQuery),
    __param(0, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __metadata("design:paramtypes", [Object])
], RecordAsOfHandler);
//# sourceMappingURL=audit.queries.js.map