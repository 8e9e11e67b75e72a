// The yardsticks of `npm run bench`, each run in its own process by bench/http.ts:
//   node dist-bench/bench/floor.js nest <bytes>   a bare NestJS + Express app: one controller, no middleware
//   node dist-bench/bench/floor.js node <bytes>   raw node:http, the limit of this machine and Node
// Both answer every GET with one constant JSON body of about <bytes> bytes and print their address.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

function constantBody(bytes: number): object {
  const empty = JSON.stringify({ data: [{ padding: '' }], success: true, status: 200 }).length;
  return { data: [{ padding: 'x'.repeat(Math.max(0, bytes - empty)) }], success: true, status: 200 };
}

async function nest(body: object): Promise<string> {
  @Controller()
  class FloorController {
    @Get('*path')
    answer(): object {
      return body;
    }
  }
  @Module({ controllers: [FloorController] })
  class FloorModule {}
  const app = await NestFactory.create(FloorModule, { logger: false, bodyParser: false });
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
(kind === 'nest' ? nest(body) : node(body)).then((url) => console.log(`Listening on ${url}`));
