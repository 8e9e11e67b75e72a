// The yardsticks of `npm run bench`, each run in its own process by bench/http.ts:
//   node dist-bench/bench/floor.js nest <bytes>   a bare NestJS + Express app: one controller, no middleware
//   node dist-bench/bench/floor.js nest-born <bytes>   the same, its requests born with Express's prototypes, as the service's are
//   node dist-bench/bench/floor.js node <bytes>   raw node:http, the limit of this machine and Node
// Both answer every GET with one constant JSON body of about <bytes> bytes and print their address.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

async function nest(body: object, bornPrototypes: boolean): Promise<string> {
  @Controller()
  class FloorController {
    @Get('*path')
    answer(): object {
      return body;
    }
  }
  @Module({ controllers: [FloorController] })
  class FloorModule {}
  const adapter = bornPrototypes ? new BornPrototypesAdapter() : new ExpressAdapter();
  const app = await NestFactory.create(FloorModule, adapter, { logger: false, bodyParser: false });
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
void (kind === 'node' ? node(body) : nest(body, kind === 'nest-born')).then((url) => console.log(`Listening on ${url}`));
