"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.envelope = void 0;
const envelope = (data, status, message) => message === undefined ? { data, success: true, status } : { data, success: true, status, message };
exports.envelope = envelope;
//# sourceMappingURL=envelope.js.map