import type { Response } from 'express';

/** The one Content-Type of every response, errors included, spelled as the contract spells it. */
export const JSON_CONTENT_TYPE = 'application/json; charset=UTF-8';

/** Writes a JSON body without Express's res.json, which would lowercase the charset. */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.status(status);
  // An answer given before the body was read (refused on its headers) ends the connection: kept
  // alive, Node would read and discard whatever body the client goes on sending.
  if (!res.req.complete) res.setHeader('Connection', 'close');
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
