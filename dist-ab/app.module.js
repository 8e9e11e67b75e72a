"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var AppModule_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.AppModule = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const audit_module_1 = require("./audit/audit.module");
const customers_module_1 = require("./customers/customers.module");
const metrics_module_1 = require("./metrics/metrics.module");
const profiles_module_1 = require("./profiles/profiles.module");
const health_module_1 = require("./health/health.module");
const projections_module_1 = require("./projections/projections.module");
const read_models_1 = require("./read-models");
const storage_module_1 = require("./storage/storage.module");
let AppModule = AppModule_1 = class AppModule {
    static forRoot(config) {
        return {
            module: AppModule_1,
            imports: [
                cqrs_1.CqrsModule.forRoot(),
                customers_module_1.CustomersModule,
                profiles_module_1.ProfilesModule,
                audit_module_1.AuditModule,
                metrics_module_1.MetricsModule,
                storage_module_1.StorageModule.forRoot(config),
                projections_module_1.ProjectionsModule.forRoot(read_models_1.READ_MODELS),
                health_module_1.HealthModule,
            ],
        };
    }
};
exports.AppModule = AppModule;
exports.AppModule = AppModule = AppModule_1 = __decorate([
    (0, common_1.Module)({})
], AppModule);
//# sourceMappingURL=app.module.js.map