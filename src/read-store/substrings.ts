import { createHash } from 'node:crypto';
import type { CollectionSchema } from './read-store.port';

/**
 * The tokens that let a full-text index find substrings of a record's `contains-ci` values within
 * its account, as the read stores index them: every distinct 1-, 2- and 3-character piece (n-gram)
 * of each value, each prefixed with a key of the record's account and the field's place among the
 * collection's substring fields. A substring query is then the AND of its pieces' tokens (itself,
 * up to three characters; its 3-grams, longer), so the index hands over only the account's records
 * that hold every piece, newest first, and the store checks the whole substring on those.
 *
 * Why pieces of up to three characters rather than FTS5's trigram tokenizer: a query of one or two
 * characters has a token of its own (the trigram tokenizer scans the table for those), and the
 * account key keeps one tenant's common substrings out of another's queries.
 *
 * Tokens are ASCII letters and digits (the values' UTF-8 bytes in hex), so any tokenizer that
 * splits on spaces keeps them whole; values are lowercased before (filterKey), queries alike.
 */
const PIECE = 3;

/** A short key per account: a collision only costs a few more records checked. */
const accountKey = (accountId: string) => `k${createHash('sha256').update(accountId).digest('hex').slice(0, 8)}`;

/** The field's place among the substring fields, as one letter outside the hex digits. */
const fieldKey = (place: number) => String.fromCharCode(0x67 + place); // g, h, i, …

const hex = (text: string) => Buffer.from(text, 'utf8').toString('hex');

/** The distinct pieces of `value` of lengths 1 to PIECE, by code point. */
function pieces(value: string, lengths: number[]): Set<string> {
  const chars = [...value];
  const found = new Set<string>();
  for (const n of lengths) for (let i = 0; i + n <= chars.length; i++) found.add(chars.slice(i, i + n).join(''));
  return found;
}

/** The collection's substring (`contains-ci`) fields, in the order their tokens number them. */
export const substringFields = (schema: CollectionSchema) => Object.keys(schema.filters).filter((f) => schema.filters[f] === 'contains-ci');

/** Whether a find reads the substring index: substring filters alone (an exact one reads its own index). */
export function readsSubstrings(schema: CollectionSchema, fields: string[]): boolean {
  return fields.length > 0 && fields.every((f) => schema.filters[f] === 'contains-ci');
}

/** A document's tokens, space-separated ('' when it has no substring value). */
export function substringTokens(accountId: string, values: string[]): string {
  const account = accountKey(accountId);
  return values
    .flatMap((value, place) => [...pieces(value, [1, 2, 3])].map((piece) => `${account}${fieldKey(place)}${hex(piece)}`))
    .join(' ');
}

/** The tokens every record holding `substring` in the field at `place` has: an FTS5 query (implicit AND). */
export function substringQuery(accountId: string, place: number, substring: string): string {
  const prefix = `${accountKey(accountId)}${fieldKey(place)}`;
  const wanted = [...substring].length <= PIECE ? new Set([substring]) : pieces(substring, [PIECE]);
  return [...wanted].map((piece) => `${prefix}${hex(piece)}`).join(' ');
}
