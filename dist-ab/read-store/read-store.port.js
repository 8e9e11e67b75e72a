"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.READ_STORE = exports.RebuildBehindError = exports.GenerationReplacedError = void 0;
class GenerationReplacedError extends Error {
    constructor(collection, generation) {
        super(`Generation ${generation} of ${collection} is no longer live or building`);
        this.collection = collection;
        this.generation = generation;
        this.name = 'GenerationReplacedError';
    }
}
exports.GenerationReplacedError = GenerationReplacedError;
class RebuildBehindError extends Error {
    constructor(collection) {
        super(`The rebuild of ${collection} is behind the live read model`);
        this.collection = collection;
        this.name = 'RebuildBehindError';
    }
}
exports.RebuildBehindError = RebuildBehindError;
exports.READ_STORE = Symbol('ReadStore');
//# sourceMappingURL=read-store.port.js.map