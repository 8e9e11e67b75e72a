"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PROJECTIONS = void 0;
exports.PROJECTIONS = Symbol('Projections');
//# sourceMappingURL=projection.js.map