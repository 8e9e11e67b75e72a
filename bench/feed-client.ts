// The change feed's consumers as the feed benches run them (bench/feed.ts, bench/feed-scale.ts):
// plain HTTP requests, server-sent event streams, long-polls, and what /proc tells of the service.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export const now = () => performance.now();
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request on `agent` (keep-alive: one connection each caller), the whole answer read. */
export function call(url: string, token: string, method: string, path: string, body?: unknown, agent?: Agent): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, url),
      { method, agent, headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A server-sent events consumer of GET /v1/events: counts heartbeats, hands each `data:` line on with the time it arrived. */
export interface Stream {
  /** Resolves once the answer's first bytes (`retry:`) arrived. */
  opened: Promise<void>;
  heartbeats: number;
  entries: number;
  /** Set when the service ended the stream. */
  ended: boolean;
  close(): void;
}

export function openStream(url: string, token: string, after: string | undefined, onData: (data: string, at: number) => void): Stream {
  let resolveOpened!: () => void;
  let rejectOpened!: (error: Error) => void;
  const stream: Stream = {
    opened: new Promise<void>((resolve, reject) => ((resolveOpened = resolve), (rejectOpened = reject))),
    heartbeats: 0,
    entries: 0,
    ended: false,
    close: () => req.destroy(),
  };
  const path = `/v1/events${after ? `?after=${after}` : ''}`;
  // A connection of its own (agent: false), as every consumer of the platform would have.
  const req = request(new URL(path, url), { agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
    if (res.statusCode !== 200) return rejectOpened(new Error(`stream answered ${res.statusCode}`));
    res.setEncoding('utf8');
    let buffered = '';
    res.on('data', (chunk: string) => {
      const at = now();
      buffered += chunk;
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (block.startsWith('retry:')) resolveOpened();
        else if (block.startsWith(':')) stream.heartbeats++;
        else {
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (data) {
            stream.entries++;
            onData(data, at);
          }
        }
      }
    });
    res.on('close', () => (stream.ended = true));
  });
  req.on('error', (error) => {
    stream.ended = true;
    rejectOpened(error);
  });
  req.end();
  return stream;
}

/**
 * A consumer that opens a stream and then stops reading: its socket is paused from the start, so
 * the kernel's buffers fill, then the service's.
 */
export function stalledStream(url: string, token: string): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) }, () => {
    socket.write(`GET /v1/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`);
  });
  socket.pause();
  socket.on('error', () => undefined);
  return socket;
}

/** A long-polling consumer: GET /v1/events?wait=30 after its last cursor, again and again, until stopped. */
export function longPoll(url: string, token: string, after: string | undefined, onData: (data: string, at: number) => void): { stop(): void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let stopped = false;
  void (async () => {
    let cursor = after;
    while (!stopped) {
      const answer = await call(url, token, 'GET', `/v1/events?limit=1000&wait=30${cursor ? `&after=${cursor}` : ''}`, undefined, agent).catch(() => undefined);
      const at = now();
      if (!answer || stopped) break;
      if (answer.status !== 200) throw new Error(`long-poll answered ${answer.status}: ${answer.text}`);
      for (const entry of JSON.parse(answer.text).data as unknown[]) onData(JSON.stringify(entry), at);
      cursor = answer.headers['x-next-cursor'] as string;
    }
  })();
  return {
    stop: () => {
      stopped = true;
      agent.destroy();
    },
  };
}

/** The cursor after the last entry of the account: pages through it. */
export async function headCursor(url: string, token: string): Promise<string> {
  let cursor: string | undefined;
  for (;;) {
    const answer = await call(url, token, 'GET', `/v1/events?limit=1000${cursor ? `&after=${cursor}` : ''}`);
    if (answer.status !== 200) throw new Error(`GET /v1/events answered ${answer.status}: ${answer.text}`);
    cursor = answer.headers['x-next-cursor'] as string;
    if ((JSON.parse(answer.text).data as unknown[]).length < 1000) return cursor;
  }
}

/** A process's memory from /proc, in MB: resident, its peak, and anonymous memory (heap, buffers: what connections cost). */
export interface Memory {
  rss: number;
  peak: number;
  anonymous: number;
}

export function memoryOf(pid: number): Memory {
  const kb = (text: string, field: string) => Number(text.match(new RegExp(`^${field}:\\s+(\\d+)`, 'm'))![1]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return { rss: kb(status, 'VmRSS') / 1024, peak: kb(status, 'VmHWM') / 1024, anonymous: kb(rollup, 'Anonymous') / 1024 };
}

/** The V8 heap in use and Node's external memory, in MB, from the service's /metrics (prom-client's defaults). */
export async function heapOf(url: string): Promise<{ heap: number; external: number }> {
  const text = (await call(url, '', 'GET', '/metrics')).text;
  const metric = (name: string) => Number(text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm'))?.[1] ?? NaN) / 1e6;
  return { heap: metric('nodejs_heap_size_used_bytes'), external: metric('nodejs_external_memory_bytes') };
}
