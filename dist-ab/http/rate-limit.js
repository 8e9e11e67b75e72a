"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.FixedWindowLimiter = void 0;
class FixedWindowLimiter {
    constructor(limit, windowMs) {
        this.limit = limit;
        this.windowMs = windowMs;
        this.windows = new Map();
        setInterval(() => this.sweep(Date.now()), windowMs).unref();
    }
    hit(key, now = Date.now()) {
        let window = this.windows.get(key);
        if (!window || window.endsAt <= now) {
            window = { hits: 0, endsAt: now + this.windowMs };
            this.windows.set(key, window);
        }
        window.hits++;
        return window.hits > this.limit ? Math.max(1, Math.ceil((window.endsAt - now) / 1000)) : 0;
    }
    blocked(key, now = Date.now()) {
        const window = this.windows.get(key);
        return window && window.endsAt > now && window.hits >= this.limit ? Math.max(1, Math.ceil((window.endsAt - now) / 1000)) : 0;
    }
    sweep(now) {
        for (const [key, window] of this.windows)
            if (window.endsAt <= now)
                this.windows.delete(key);
    }
}
exports.FixedWindowLimiter = FixedWindowLimiter;
//# sourceMappingURL=rate-limit.js.map