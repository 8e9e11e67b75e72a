"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.formatPosition = formatPosition;
function formatPosition(position) {
    if (!position || position.commit < 0n)
        return '0';
    return position.commit === position.prepare ? `${position.commit}` : `${position.commit}/${position.prepare}`;
}
//# sourceMappingURL=positions.js.map