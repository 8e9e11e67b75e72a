// The yardsticks of `npm run bench`, each run in its own process by bench/http.ts:
//   node dist-bench/bench/floor.js nest <bytes>   a bare NestJS + Express app: one controller, no middleware
//   node dist-bench/bench/floor.js nest-born <bytes>   the same, its requests born with Express's prototypes, as the service's are
//   node dist-bench/bench/floor.js node <bytes>   raw node:http, the limit of this machine and Node
//   node dist-bench/bench/floor.js nest-durable <bytes>   the bare NestJS app, whose POST is a durable write (below)
//   node dist-bench/bench/floor.js nest-durable-64k <bytes>   the same, each write padded to 64 KiB (about what the service's create writes)
// Each answers with one constant JSON body of about <bytes> bytes and prints its address.
import 'reflect-metadata';
import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import { mkdtempSync, rmSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function constantBody(bytes: number): object {
  const empty = JSON.stringify({ data: [{ padding: '' }], success: true, status: 200 }).length;
  return { data: [{ padding: 'x'.repeat(Math.max(0, bytes - empty)) }], success: true, status: 200 };
}

/**
 * Express whose server makes requests and responses with the app's prototypes, so that Express's
 * per-request Object.setPrototypeOf changes nothing: what the service does (src/http/json-express.adapter.ts),
 * written apart from it, as a yardstick shares no code with what it measures.
 */
class BornPrototypesAdapter extends ExpressAdapter {
  override initHttpServer(): void {
    const app = this.getInstance<Express>();
    class Request extends IncomingMessage {}
    class Response extends ServerResponse {}
    Object.setPrototypeOf(Request.prototype, app.request);
    Object.setPrototypeOf(Response.prototype, app.response);
    app.request = Request.prototype as Express['request'];
    app.response = Response.prototype as Express['response'];
    this.httpServer = createServer({ IncomingMessage: Request, ServerResponse: Response as typeof ServerResponse }, app);
  }
}

/**
 * The least a durable write costs on this disk: each request's body appended to one file (in the
 * temp dir, the service's file system), answered once an fdatasync off the event loop covers it;
 * requests that come during a sync share the next one (a group commit). Each line is padded to
 * `padTo` characters: the disk's cost of writing as much per request as the service does.
 */
async function durableLog(padTo: number): Promise<(line: string) => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-floor-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = await open(join(dir, 'log'), 'a');
  let waiting: (() => void)[] = [];
  let syncing = false;
  const syncAll = async () => {
    syncing = true;
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      await file.datasync();
      for (const done of group) done();
    }
    syncing = false;
  };
  return (line) =>
    new Promise((resolve) => {
      writeSync(file.fd, line.padEnd(padTo));
      waiting.push(resolve);
      if (!syncing) void syncAll();
    });
}

/** `durable`: the POST is a durable write of at least that many bytes (0: the body alone); none: the POST answers at once. */
async function nest(body: object, bornPrototypes: boolean, durable?: number): Promise<string> {
  const append = durable === undefined ? undefined : await durableLog(durable);
  @Controller()
  class FloorController {
    @Get('*path')
    answer(): object {
      return body;
    }

    @Post('*path')
    async write(@Body() written: unknown): Promise<object> {
      if (!append) return body;
      await append(`${JSON.stringify(written)}\n`);
      return body;
    }
  }
  @Module({ controllers: [FloorController] })
  class FloorModule {}
  const adapter = bornPrototypes ? new BornPrototypesAdapter() : new ExpressAdapter();
  const app = await NestFactory.create(FloorModule, adapter, { logger: false, bodyParser: durable !== undefined });
  await app.listen(0, '127.0.0.1');
  return `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
}

function node(body: object): Promise<string> {
  const text = JSON.stringify(body);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=UTF-8', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

const [kind, bytes] = process.argv.slice(2);
const body = constantBody(Number(bytes));
// Exits on SIGTERM, so that a profile taken with --cpu-prof is written.
process.once('SIGTERM', () => process.exit(0));
const DURABLE: Record<string, number> = { 'nest-durable': 0, 'nest-durable-64k': 64 * 1024 };
void (kind === 'node' ? node(body) : nest(body, kind === 'nest-born', DURABLE[kind])).then((url) => console.log(`Listening on ${url}`));
