import { BSON, Document } from 'mongodb';
import { createServer, Server, Socket } from 'node:net';

/**
 * A TCP endpoint speaking just enough of MongoDB's wire protocol for the driver to take it for a
 * standalone mongod 7.0 (wire version 21): it answers the handshake (legacy hello over OP_QUERY,
 * https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/) and later hello and ping
 * commands (OP_MSG), any other command as the test's `reply` says, and leaves unanswered those it
 * has no reply for. It is no MongoDB: it shows what the adapter does when a server stops answering
 * mid-operation, nothing about the server.
 */
const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

const HELLO: Document = {
  helloOk: true,
  ismaster: true,
  isWritablePrimary: true,
  maxBsonObjectSize: 16 * 1024 * 1024,
  maxMessageSizeBytes: 48_000_000,
  maxWriteBatchSize: 100_000,
  logicalSessionTimeoutMinutes: 30,
  minWireVersion: 0,
  maxWireVersion: 21,
  readOnly: false,
  ok: 1,
};

export interface SilentMongo {
  uri: string;
  /** Commands received that were left unanswered, by name. */
  unanswered: string[];
  close(): Promise<void>;
}

export async function startSilentMongo(reply: (command: Document) => Document | null = () => null): Promise<SilentMongo> {
  const unanswered: string[] = [];
  const sockets = new Set<Socket>();
  let connectionId = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const id = ++connectionId;
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= buffered.readInt32LE(0)) {
        const message = buffered.subarray(0, buffered.readInt32LE(0));
        buffered = buffered.subarray(message.length);
        const answered = answer(message, { ...HELLO, connectionId: id, localTime: new Date() }, reply, unanswered);
        if (answered) socket.write(answered);
      }
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    unanswered,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The reply to one message, or null to leave it unanswered. */
function answer(message: Buffer, hello: Document, reply: (command: Document) => Document | null, unanswered: string[]): Buffer | null {
  const requestId = message.readInt32LE(4);
  const opCode = message.readInt32LE(12);
  if (opCode === OP_QUERY) {
    // flags, then the collection name (a C string), numberToSkip and numberToReturn, then the query.
    const nameEnd = message.indexOf(0, 20);
    const query = BSON.deserialize(message.subarray(nameEnd + 9, nameEnd + 9 + message.readInt32LE(nameEnd + 9)));
    return isHello(query) ? opReply(requestId, hello) : (unanswered.push(Object.keys(query)[0]), null);
  }
  if (opCode === OP_MSG) {
    const command = opMsgCommand(message);
    const name = Object.keys(command)[0];
    if (isHello(command)) return opMsg(requestId, hello);
    if (name === 'ping') return opMsg(requestId, { ok: 1 });
    const scripted = reply(command);
    if (scripted) return opMsg(requestId, scripted);
    unanswered.push(name);
    return null;
  }
  return null;
}

/**
 * An OP_MSG's command: after flagBits, a kind-0 section holds it, and kind-1 sections (document
 * sequences: a write's `updates`, `documents`, `deletes`) add their documents under their names.
 */
function opMsgCommand(message: Buffer): Document {
  const command = BSON.deserialize(message.subarray(21, 21 + message.readInt32LE(21)));
  for (let at = 21 + message.readInt32LE(21); at < message.length && message[at] === 1; ) {
    const end = at + 1 + message.readInt32LE(at + 1);
    const nameEnd = message.indexOf(0, at + 5);
    const documents: Document[] = [];
    for (let doc = nameEnd + 1; doc < end; doc += message.readInt32LE(doc)) documents.push(BSON.deserialize(message.subarray(doc, doc + message.readInt32LE(doc))));
    command[message.toString('utf8', at + 5, nameEnd)] = documents;
    at = end;
  }
  return command;
}

const isHello = (command: Document) => 'hello' in command || 'isMaster' in command || 'ismaster' in command;

function header(length: number, responseTo: number, opCode: number): Buffer {
  const h = Buffer.alloc(16);
  h.writeInt32LE(length, 0);
  h.writeInt32LE(0, 4);
  h.writeInt32LE(responseTo, 8);
  h.writeInt32LE(opCode, 12);
  return h;
}

function opReply(responseTo: number, document: Document): Buffer {
  const body = Buffer.from(BSON.serialize(document));
  const fields = Buffer.alloc(20); // responseFlags, cursorID (8 bytes), startingFrom, numberReturned
  fields.writeInt32LE(1, 16);
  return Buffer.concat([header(16 + 20 + body.length, responseTo, OP_REPLY), fields, body]);
}

function opMsg(responseTo: number, document: Document): Buffer {
  const body = Buffer.from(BSON.serialize(document));
  const flagsAndKind = Buffer.alloc(5); // flagBits 0, section kind 0
  return Buffer.concat([header(16 + 5 + body.length, responseTo, OP_MSG), flagsAndKind, body]);
}
