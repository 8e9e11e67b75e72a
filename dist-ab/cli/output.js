"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.count = void 0;
exports.formatTable = formatTable;
exports.duration = duration;
function formatTable(header, rows) {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
    return [line(header), ...rows.map(line)].join('\n') + '\n';
}
const count = (n) => Math.round(n).toLocaleString('en-US');
exports.count = count;
function duration(seconds) {
    if (!Number.isFinite(seconds))
        return '?';
    const s = Math.max(0, Math.round(seconds));
    return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
//# sourceMappingURL=output.js.map