import type { Response } from 'express';
import type { Socket } from 'node:net';

/** The one Content-Type of every response, errors included, spelled as the contract spells it. */
export const JSON_CONTENT_TYPE = 'application/json; charset=UTF-8';

/** Writes a JSON body without Express's res.json, which would lowercase the charset. */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.status(status);
  // An answer given before the body was read (refused on its headers) ends the connection: kept
  // alive, Node would read and discard whatever body the client goes on sending.
  if (!res.req.complete) {
    res.setHeader('Connection', 'close');
    lingerOnClose(res.req.socket);
  }
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** How long a connection closed on an unread body still takes in what the client sends. */
const LINGER_MS = 5_000;

/**
 * Closes the connection the way HTTP/1.1 servers must when the client may still be sending its body
 * (RFC 9112, 9.6): the answer sent and the sending side shut, then whatever else arrives read and
 * dropped until the client closes, for LINGER_MS at most. Closed at once, the socket would answer
 * the client's next bytes with a reset, which often reaches the client before it reads the answer:
 * it then sees EPIPE or ECONNRESET instead of the 413. Node's server ends a `Connection: close`
 * exchange with socket.destroySoon(), so that is where the lingering goes.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = () => {
    socket.end();
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => clearTimeout(timer));
  };
}
