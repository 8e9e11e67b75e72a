"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.StoreUnavailableError = void 0;
class StoreUnavailableError extends Error {
    constructor(store, reason) {
        super(`${store} is unreachable: ${reason}`);
        this.store = store;
        this.name = 'StoreUnavailableError';
    }
}
exports.StoreUnavailableError = StoreUnavailableError;
//# sourceMappingURL=store-unavailable.error.js.map