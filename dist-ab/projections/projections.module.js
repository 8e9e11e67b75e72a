"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var ProjectionsModule_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.ProjectionsModule = void 0;
const common_1 = require("@nestjs/common");
const projection_1 = require("./projection");
const projections_service_1 = require("./projections.service");
let ProjectionsModule = ProjectionsModule_1 = class ProjectionsModule {
    static forRoot(projections) {
        return {
            module: ProjectionsModule_1,
            providers: [{ provide: projection_1.PROJECTIONS, useValue: projections }, projections_service_1.ProjectionsService],
            exports: [projections_service_1.ProjectionsService],
        };
    }
};
exports.ProjectionsModule = ProjectionsModule;
exports.ProjectionsModule = ProjectionsModule = ProjectionsModule_1 = __decorate([
    (0, common_1.Global)(),
    (0, common_1.Module)({})
], ProjectionsModule);
//# sourceMappingURL=projections.module.js.map