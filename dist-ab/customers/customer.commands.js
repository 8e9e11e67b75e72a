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
exports.EraseCustomerHandler = exports.DeleteCustomerHandler = exports.UpdateCustomerHandler = exports.CreateCustomerHandler = exports.EraseCustomerCommand = exports.DeleteCustomerCommand = exports.UpdateCustomerCommand = exports.CreateCustomerCommand = exports.CUSTOMER_ERASER = exports.CUSTOMER_WRITER = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const node_crypto_1 = require("node:crypto");
const record_writer_1 = require("../records/record-writer");
const customer_decider_1 = require("./customer.decider");
exports.CUSTOMER_WRITER = Symbol('CustomerWriter');
exports.CUSTOMER_ERASER = Symbol('CustomerEraser');
class CreateCustomerCommand extends cqrs_1.Command {
    constructor(context, id, fields) {
        super();
        this.context = context;
        this.id = id;
        this.fields = fields;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.CreateCustomerCommand = CreateCustomerCommand;
class UpdateCustomerCommand extends cqrs_1.Command {
    constructor(context, id, fields, precondition) {
        super();
        this.context = context;
        this.id = id;
        this.fields = fields;
        this.precondition = precondition;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.UpdateCustomerCommand = UpdateCustomerCommand;
class DeleteCustomerCommand extends cqrs_1.Command {
    constructor(context, id, precondition) {
        super();
        this.context = context;
        this.id = id;
        this.precondition = precondition;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.DeleteCustomerCommand = DeleteCustomerCommand;
class EraseCustomerCommand extends cqrs_1.Command {
    constructor(context, id) {
        super();
        this.context = context;
        this.id = id;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.EraseCustomerCommand = EraseCustomerCommand;
let CreateCustomerHandler = class CreateCustomerHandler {
    constructor(customers) {
        this.customers = customers;
    }
    async execute({ context, id, fields, commandId }) {
        await this.customers.write(id, context, commandId, (state) => (0, customer_decider_1.decideCreateCustomer)(state, fields), { isNew: true });
    }
};
exports.CreateCustomerHandler = CreateCustomerHandler;
exports.CreateCustomerHandler = CreateCustomerHandler = __decorate([
    (0, cqrs_1.CommandHandler)(CreateCustomerCommand),
    __param(0, (0, common_1.Inject)(exports.CUSTOMER_WRITER)),
    __metadata("design:paramtypes", [record_writer_1.RecordWriter])
], CreateCustomerHandler);
let UpdateCustomerHandler = class UpdateCustomerHandler {
    constructor(customers) {
        this.customers = customers;
    }
    async execute({ context, id, fields, commandId, precondition }) {
        await this.customers.write(id, context, commandId, (state) => (0, customer_decider_1.decideUpdateCustomer)(state, context.accountId, fields), { precondition });
    }
};
exports.UpdateCustomerHandler = UpdateCustomerHandler;
exports.UpdateCustomerHandler = UpdateCustomerHandler = __decorate([
    (0, cqrs_1.CommandHandler)(UpdateCustomerCommand),
    __param(0, (0, common_1.Inject)(exports.CUSTOMER_WRITER)),
    __metadata("design:paramtypes", [record_writer_1.RecordWriter])
], UpdateCustomerHandler);
let DeleteCustomerHandler = class DeleteCustomerHandler {
    constructor(customers) {
        this.customers = customers;
    }
    async execute({ context, id, commandId, precondition }) {
        await this.customers.write(id, context, commandId, (state) => (0, customer_decider_1.decideDeleteCustomer)(state, context.accountId), { precondition });
    }
};
exports.DeleteCustomerHandler = DeleteCustomerHandler;
exports.DeleteCustomerHandler = DeleteCustomerHandler = __decorate([
    (0, cqrs_1.CommandHandler)(DeleteCustomerCommand),
    __param(0, (0, common_1.Inject)(exports.CUSTOMER_WRITER)),
    __metadata("design:paramtypes", [record_writer_1.RecordWriter])
], DeleteCustomerHandler);
let EraseCustomerHandler = class EraseCustomerHandler {
    constructor(eraser) {
        this.eraser = eraser;
    }
    async execute({ context, id, commandId }) {
        await this.eraser.erase(id, context, commandId);
    }
};
exports.EraseCustomerHandler = EraseCustomerHandler;
exports.EraseCustomerHandler = EraseCustomerHandler = __decorate([
    (0, cqrs_1.CommandHandler)(EraseCustomerCommand),
    __param(0, (0, common_1.Inject)(exports.CUSTOMER_ERASER)),
    __metadata("design:paramtypes", [Function])
], EraseCustomerHandler);
//# sourceMappingURL=customer.commands.js.map