import { BSON, Document, ObjectId } from 'mongodb';
import { createServer, Server, Socket } from 'node:net';

/**
 * A TCP endpoint speaking just enough of MongoDB's wire protocol for the driver to take it for a
 * standalone mongod 7.0 (wire version 21), or for the members of a replica set
 * (startScriptedReplicaSet): it answers the handshake (legacy hello over OP_QUERY,
 * https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/) and later hello, ping and endSessions
 * commands (OP_MSG), any other command as the test's `reply` says (at once, or when its promise
 * settles: a server busy with it), and leaves unanswered those it has no reply for. It is no MongoDB: it shows what the adapter does when a server stops answering
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

/** What a test answers to a command: null leaves it unanswered; a promise answers when it settles. */
export type Reply = Document | null | Promise<Document | null>;

export interface SilentMongo {
  uri: string;
  /** Commands received that were left unanswered, by name. */
  unanswered: string[];
  close(): Promise<void>;
}

export async function startSilentMongo(reply: (command: Document) => Reply = () => null): Promise<SilentMongo> {
  const endpoint = await listen(reply, () => HELLO);
  return { uri: `mongodb://${endpoint.address}/?directConnection=true`, unanswered: endpoint.unanswered, close: endpoint.close };
}

export interface ScriptedReplicaSet {
  /** Both members and the set's name, as a replica set's URI names them; its options follow a `&`. */
  uri: string;
  unanswered: string[];
  close(): Promise<void>;
}

/**
 * A replica set `rs0` of two scripted members, a primary and a secondary, each answering hello as
 * a member does (the fields the driver's server description reads: mongodb 7.9
 * src/sdam/server_description.ts, and the topology's checks of setName, setVersion and electionId:
 * src/sdam/topology_description.ts, updateRsFromPrimary). `reply` is told which member a command
 * reached.
 */
export async function startScriptedReplicaSet(reply: (member: 'primary' | 'secondary', command: Document) => Reply): Promise<ScriptedReplicaSet> {
  const hosts: string[] = [];
  const member = (secondary: boolean): Document => ({
    ...HELLO,
    isWritablePrimary: !secondary,
    ismaster: !secondary,
    secondary,
    setName: 'rs0',
    setVersion: 1,
    hosts,
    primary: hosts[0],
    me: hosts[secondary ? 1 : 0],
    ...(secondary ? {} : { electionId: new ObjectId('7fffffff0000000000000001') }),
    lastWrite: { lastWriteDate: new Date() },
  });
  const primary = await listen(
    (command) => reply('primary', command),
    () => member(false),
  );
  const secondary = await listen(
    (command) => reply('secondary', command),
    () => member(true),
  );
  hosts.push(primary.address, secondary.address);
  return {
    uri: `mongodb://${hosts.join(',')}/?replicaSet=rs0`,
    unanswered: primary.unanswered,
    close: async () => {
      await primary.close();
      await secondary.close();
    },
  };
}

async function listen(reply: (command: Document) => Reply, hello: () => Document) {
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
        void answer(message, { ...hello(), connectionId: id, localTime: new Date() }, reply, unanswered).then((answered) => answered && socket.write(answered));
      }
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return {
    address: `127.0.0.1:${port}`,
    unanswered,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The reply to one message, or null to leave it unanswered. */
async function answer(message: Buffer, hello: Document, reply: (command: Document) => Reply, unanswered: string[]): Promise<Buffer | null> {
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
    if (name === 'ping' || name === 'endSessions') return opMsg(requestId, { ok: 1 });
    const scripted = await reply(command);
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
  for (let at = 21 + message.readInt32LE(21); at < message.length && message[at] === 1;) {
    const end = at + 1 + message.readInt32LE(at + 1);
    const nameEnd = message.indexOf(0, at + 5);
    const documents: Document[] = [];
    for (let doc = nameEnd + 1; doc < end; doc += message.readInt32LE(doc))
      documents.push(BSON.deserialize(message.subarray(doc, doc + message.readInt32LE(doc))));
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
