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
exports.CustomersModule = void 0;
const common_1 = require("@nestjs/common");
const record_eraser_1 = require("../erasure/record-eraser");
const read_store_port_1 = require("../read-store/read-store.port");
const storage_module_1 = require("../storage/storage.module");
const customer_projection_1 = require("./customer.projection");
const event_store_port_1 = require("../event-store/event-store.port");
const projections_service_1 = require("../projections/projections.service");
const idempotent_creates_1 = require("../idempotency/idempotent-creates");
const record_writer_1 = require("../records/record-writer");
const customer_decider_1 = require("./customer.decider");
const customer_commands_1 = require("./customer.commands");
const customer_queries_1 = require("./customer.queries");
const customers_controller_1 = require("./customers.controller");
let CustomersModule = class CustomersModule {
    constructor(eraser) {
        this.eraser = eraser;
    }
    async onApplicationBootstrap() {
        await this.eraser.finishPending().catch((error) => new common_1.Logger('CustomersModule').error(`Could not finish interrupted erasures: ${error.message}`));
    }
};
exports.CustomersModule = CustomersModule;
exports.CustomersModule = CustomersModule = __decorate([
    (0, common_1.Module)({
        controllers: [customers_controller_1.CustomersController],
        providers: [
            idempotent_creates_1.IdempotentCreates,
            {
                provide: customer_commands_1.CUSTOMER_WRITER,
                useFactory: (eventStore, projections) => new record_writer_1.RecordWriter(customer_decider_1.CUSTOMER, eventStore, projections),
                inject: [event_store_port_1.EVENT_STORE, projections_service_1.ProjectionsService],
            },
            {
                provide: customer_commands_1.CUSTOMER_ERASER,
                useFactory: (writer, keys, readStore) => new record_eraser_1.RecordEraser(customer_decider_1.CUSTOMER, customer_projection_1.customerProjection.schema.name, writer, keys, readStore),
                inject: [customer_commands_1.CUSTOMER_WRITER, storage_module_1.DATA_KEYS, read_store_port_1.READ_STORE],
            },
            customer_commands_1.CreateCustomerHandler,
            customer_commands_1.UpdateCustomerHandler,
            customer_commands_1.DeleteCustomerHandler,
            customer_commands_1.EraseCustomerHandler,
            customer_queries_1.GetCustomerHandler,
            customer_queries_1.ListCustomersHandler,
        ],
    }),
    __param(0, (0, common_1.Inject)(customer_commands_1.CUSTOMER_ERASER)),
    __metadata("design:paramtypes", [record_eraser_1.RecordEraser])
], CustomersModule);
//# sourceMappingURL=customers.module.js.map