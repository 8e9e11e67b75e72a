"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.KEY_STORE = void 0;
exports.KEY_STORE = Symbol('KeyStore');
//# sourceMappingURL=key-store.port.js.map