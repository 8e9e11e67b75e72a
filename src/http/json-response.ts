import type { Response } from 'express';

/** The one Content-Type of every response, errors included, spelled as the contract spells it. */
export const JSON_CONTENT_TYPE = 'application/json; charset=UTF-8';

/** Writes a JSON body without Express's res.json, which would lowercase the charset. */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.status(status);
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
