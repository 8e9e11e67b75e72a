"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.setETag = void 0;
exports.parseIfMatch = parseIfMatch;
const errors_1 = require("../errors");
const setETag = (res, revision) => res.setHeader('ETag', `"${revision}"`);
exports.setETag = setETag;
const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7E]*)"$/;
function parseIfMatch(header) {
    if (header === undefined)
        return undefined;
    if (header.trim() === '*')
        return '*';
    const revisions = [];
    for (const tag of header.split(',').map((t) => t.trim())) {
        const match = ENTITY_TAG.exec(tag);
        if (!match) {
            throw (0, errors_1.validationFailed)([{ field: 'If-Match', message: 'If-Match must be * or a list of entity tags such as "3"' }]);
        }
        if (!match[1] && /^\d+$/.test(match[2]))
            revisions.push(Number(match[2]));
    }
    return revisions;
}
//# sourceMappingURL=etag.js.map