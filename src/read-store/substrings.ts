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
const hashAccount = (accountId: string) => `k${createHash('sha256').update(accountId).digest('hex').slice(0, 8)}`;

/** Account keys lately made: a rebuild's index asks for the key of every record, most of them of a few accounts. */
const accountKeys = new Map<string, string>();
const ACCOUNT_KEYS_KEPT = 1000;

function accountKey(accountId: string): string {
  let key = accountKeys.get(accountId);
  if (key === undefined) {
    if (accountKeys.size >= ACCOUNT_KEYS_KEPT) accountKeys.clear();
    accountKeys.set(accountId, (key = hashAccount(accountId)));
  }
  return key;
}

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

/** The hex of each ASCII character's byte. */
const ASCII_HEX = Array.from({ length: 128 }, (_, c) => c.toString(16).padStart(2, '0'));

/**
 * A document's tokens, space-separated ('' when it has no substring value): for each value, its
 * distinct pieces of 1, then 2, then 3 code points, each in the order it first occurs. The
 * rebuild's promotion makes the tokens of every record (one call a record, from SQL), so values
 * all in ASCII, as most are, take a way that makes no string but the answer (asciiTokens).
 */
export function substringTokens(accountId: string, values: string[]): string {
  const account = accountKey(accountId);
  for (const value of values) if (!isAscii(value)) return anyTokens(account, values);
  return asciiTokens(account, values);
}

function isAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/** The answer of asciiTokens as it is written, in bytes: grown as needed, never shrunk (a few KB for the usual values). */
let written = Buffer.allocUnsafe(1 << 12);
/**
 * The pieces of the value being tokenized: a set of numbers, made anew for each value by moving
 * `mark` on (a slot is taken when its mark is the current one). Open addressing; grown as needed.
 */
let seenPieces = new Int32Array(1 << 9);
let seenMarks = new Int32Array(1 << 9);
/** 32 less the table's bits: a multiplicative hash's top bits pick the slot. */
let seenShift = 32 - 9;
let mark = 0;

/**
 * substringTokens of values in ASCII: a piece of n characters is the number n·2²¹ + its character
 * codes, 7 bits each, so telling pieces apart takes no string; tokens are written as bytes, hex
 * and all, and made one string at the end.
 */
function asciiTokens(account: string, values: string[]): string {
  const prefixLength = account.length + 1;
  let length = 0;
  for (let place = 0; place < values.length; place++) {
    const value = values[place];
    const n = value.length;
    if (n === 0) continue;
    // At most 3n pieces: a space, the prefix and at most 6 hex digits each.
    const most = length + 3 * n * (prefixLength + 7);
    if (most > written.length) {
      const larger = Buffer.allocUnsafe(Math.max(most, written.length * 2));
      written.copy(larger, 0, 0, length);
      written = larger;
    }
    // The table at most half full.
    if (6 * n > seenPieces.length) {
      let slots = seenPieces.length;
      while (slots < 6 * n) slots *= 2;
      seenPieces = new Int32Array(slots);
      seenMarks = new Int32Array(slots);
      seenShift = 32 - Math.log2(slots);
      mark = 0;
    }
    if (mark === 0x7fffffff) {
      seenMarks.fill(0);
      mark = 0;
    }
    mark++;
    const mask = seenPieces.length - 1;
    const prefixAt = length + (length === 0 ? 0 : 1); // where this value's first prefix is written
    for (let size = 1; size <= PIECE; size++) {
      for (let i = 0; i + size <= n; i++) {
        let piece = size << 21;
        for (let k = 0; k < size; k++) piece |= value.charCodeAt(i + k) << (7 * (size - 1 - k));
        let slot = Math.imul(piece, 0x9e3779b1) >>> seenShift;
        let seen = false;
        for (; seenMarks[slot] === mark; slot = (slot + 1) & mask) {
          if (seenPieces[slot] === piece) {
            seen = true;
            break;
          }
        }
        if (seen) continue;
        seenMarks[slot] = mark;
        seenPieces[slot] = piece;
        if (length > 0) written[length++] = 0x20;
        if (length === prefixAt) {
          length += written.write(account, length, 'latin1');
          written[length++] = 0x67 + place; // fieldKey(place)
        } else {
          for (let k = prefixAt; k < prefixAt + prefixLength; k++) written[length++] = written[k];
        }
        for (let k = 0; k < size; k++) {
          const c = value.charCodeAt(i + k);
          written[length++] = HEX_DIGITS[c >> 4];
          written[length++] = HEX_DIGITS[c & 15];
        }
      }
    }
  }
  return written.toString('latin1', 0, length);
}

/**
 * substringTokens of any values. A piece's hex is the concatenation of its code points' (UTF-8
 * encodes each on its own), so each code point is encoded once and the pieces put together from those.
 */
function anyTokens(account: string, values: string[]): string {
  let tokens = '';
  for (let place = 0; place < values.length; place++) {
    const value = values[place];
    if (value.length === 0) continue;
    const prefix = `${account}${fieldKey(place)}`;
    // Each code point's hex, and the code point itself where it is not ASCII (else null).
    const hexes: string[] = [];
    let chars: string[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c < 128) {
        hexes.push(ASCII_HEX[c]);
        chars?.push(value[i]);
        continue;
      }
      chars ??= [...value.slice(0, i)];
      // A surrogate pair is one code point; a lone surrogate is one too, as `[...value]` has it.
      const char = value.slice(i, c >= 0xd800 && c <= 0xdbff && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? i + 2 : i + 1);
      hexes.push(hex(char));
      chars.push(char);
      i += char.length - 1;
    }
    // Distinct pieces, as the pieces of text they are: every lone surrogate's UTF-8 is U+FFFD's,
    // so where there is any non-ASCII code point the hex does not tell all pieces apart.
    const seen = new Set<string>();
    for (let n = 1; n <= PIECE; n++) {
      for (let i = 0; i + n <= hexes.length; i++) {
        let piece = hexes[i];
        for (let k = 1; k < n; k++) piece += hexes[i + k];
        const key = chars === null ? piece : chars.slice(i, i + n).join('');
        if (seen.has(key)) continue;
        seen.add(key);
        tokens += tokens === '' ? prefix + piece : ' ' + prefix + piece;
      }
    }
  }
  return tokens;
}

/** The tokens every record holding `substring` in the field at `place` has: an FTS5 query (implicit AND). */
export function substringQuery(accountId: string, place: number, substring: string): string {
  const prefix = `${accountKey(accountId)}${fieldKey(place)}`;
  const wanted = [...substring].length <= PIECE ? new Set([substring]) : pieces(substring, [PIECE]);
  return [...wanted].map((piece) => `${prefix}${hex(piece)}`).join(' ');
}
