"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RecordIdPipe = void 0;
const errors_1 = require("../errors");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
class RecordIdPipe {
    constructor(label) {
        this.label = label;
    }
    transform(value) {
        if (!UUID.test(value))
            throw (0, errors_1.notFound)(this.label);
        return value.toLowerCase();
    }
}
exports.RecordIdPipe = RecordIdPipe;
//# sourceMappingURL=record-id.pipe.js.map