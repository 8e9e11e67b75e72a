"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.recordProjection = recordProjection;
const record_1 = require("./record");
function recordProjection(kind, schema) {
    return {
        name: schema.name,
        schema,
        streamPrefix: kind.streamPrefix,
        evolve: (document, event) => (0, record_1.evolveRecord)(kind, document, event),
    };
}
//# sourceMappingURL=record.projection.js.map