import type { Response } from 'express';
import { validationFailed } from '../errors';
import type { Precondition } from '../records/record-writer';

/** A record's ETag is its stream revision, quoted: `"3"`. */
export const setETag = (res: Response, revision: number) => res.setHeader('ETag', `"${revision}"`);

const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7E]*)"$/;

/**
 * The If-Match header of a PUT or DELETE (RFC 9110 13.1.1): `*` (the record exists) or a list of
 * entity tags compared strongly, so a weak tag or a tag that is not one of ours never matches.
 * A header that is not valid syntax is refused rather than guessed at.
 */
export function parseIfMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const revisions: number[] = [];
  for (const tag of header.split(',').map((t) => t.trim())) {
    const match = ENTITY_TAG.exec(tag);
    if (!match) {
      throw validationFailed([{ field: 'If-Match', message: 'If-Match must be * or a list of entity tags such as "3"' }]);
    }
    if (!match[1] && /^\d+$/.test(match[2])) revisions.push(Number(match[2]));
  }
  return revisions;
}
