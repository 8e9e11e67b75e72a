/**
 * Counts hits per key in fixed windows: at most `limit` per window, each key's window starting at
 * its first hit. O(1) per hit whatever the limit (a sliding log of hits costs a scan per request at
 * a high limit). Keys whose window has ended are swept once a window.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, { hits: number; endsAt: number }>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {
    setInterval(() => this.sweep(Date.now()), windowMs).unref();
  }

  /** Counts a hit; the seconds until the window ends when the key is over its limit, else 0. */
  hit(key: string, now = Date.now()): number {
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + this.windowMs };
      this.windows.set(key, window);
    }
    window.hits++;
    return window.hits > this.limit ? Math.max(1, Math.ceil((window.endsAt - now) / 1000)) : 0;
  }

  /** Seconds until the window ends when the key is already over its limit, else 0; counts nothing. */
  blocked(key: string, now = Date.now()): number {
    const window = this.windows.get(key);
    return window && window.endsAt > now && window.hits >= this.limit ? Math.max(1, Math.ceil((window.endsAt - now) / 1000)) : 0;
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }
}
