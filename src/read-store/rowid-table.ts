/** Slots at first; the table doubles whenever it is half full. */
const FIRST_SLOTS = 1 << 12;

/**
 * Rowids by document id, for a read model being built (see Build in sqlite-bulk-build.ts), held in typed
 * arrays outside the JavaScript heap: a UUID id is packed exactly into four 32-bit words (24 bytes a
 * slot, the table kept at most half full), a fraction of what a Map<string, number> costs once
 * garbage collection's headroom is counted, and the collector has nothing to scan. Ids in canonical decimal (the change feed's: its
 * events' positions) go to a table of numbers beside it (16 bytes each, given in ascending order; see
 * NumberTable); any other id to a Map.
 * `size` counts all three.
 */
export class RowidTable {
  private words = new Int32Array(FIRST_SLOTS * 4);
  /** 0: an empty slot (SQLite's rowids of a fresh table start at 1). */
  private rowids = new Float64Array(FIRST_SLOTS);
  private packed = 0;
  private readonly numbers = new NumberTable();
  private readonly others = new Map<string, number>();
  /** The key being looked up, packed: reused, so a lookup allocates nothing. */
  private readonly key = new Int32Array(4);

  get size(): number {
    return this.packed + this.numbers.size + this.others.size;
  }

  /** Bytes the table holds (its arrays; the Map of other ids aside). */
  get bytes(): number {
    return this.words.byteLength + this.rowids.byteLength + this.numbers.bytes;
  }

  get(id: string): number | undefined {
    if (!this.pack(id)) {
      const n = decimal(id);
      return n < 0 ? this.others.get(id) : this.numbers.get(n);
    }
    const slot = this.find(this.words, this.rowids);
    return this.rowids[slot] === 0 ? undefined : this.rowids[slot];
  }

  set(id: string, rowid: number): void {
    if (rowid <= 0) throw new Error(`Not a rowid: ${rowid}`);
    if (!this.pack(id)) {
      const n = decimal(id);
      return void (n < 0 ? this.others.set(id, rowid) : this.numbers.set(n, rowid));
    }
    const slot = this.find(this.words, this.rowids);
    if (this.rowids[slot] === 0) this.take(slot);
    this.rowids[slot] = rowid;
    if (this.packed * 2 > this.rowids.length) this.grow();
  }

  /**
   * The rowid of `id`, if it has one; else gives it `rowid` and returns undefined. One lookup where
   * get then set take two: a rebuild asks this of every document it writes, most of them new.
   */
  add(id: string, rowid: number): number | undefined {
    if (rowid <= 0) throw new Error(`Not a rowid: ${rowid}`);
    if (!this.pack(id)) {
      const n = decimal(id);
      if (n >= 0) return this.numbers.add(n, rowid);
      const found = this.others.get(id);
      if (found === undefined) this.others.set(id, rowid);
      return found;
    }
    const slot = this.find(this.words, this.rowids);
    if (this.rowids[slot] !== 0) return this.rowids[slot];
    this.take(slot);
    this.rowids[slot] = rowid;
    if (this.packed * 2 > this.rowids.length) this.grow();
    return undefined;
  }

  /** Puts the packed key in an empty slot. */
  private take(slot: number): void {
    this.words.set(this.key, slot * 4);
    this.packed++;
  }

  /** Packs a lowercase UUID into `key`; false for any other id. Char by char: a regex and slices cost several times as much. */
  private pack(id: string): boolean {
    if (id.length !== 36) return false;
    let word = 0;
    let nibbles = 0;
    for (let i = 0; i < 36; i++) {
      const c = id.charCodeAt(i);
      if (i === 8 || i === 13 || i === 18 || i === 23) {
        if (c !== 45) return false; // '-'
        continue;
      }
      const nibble = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1;
      if (nibble < 0) return false;
      word = (word << 4) | nibble;
      if (++nibbles % 8 === 0) this.key[nibbles / 8 - 1] = word;
    }
    return true;
  }

  /** The slot holding `key`, or the empty slot where it would go (linear probing). */
  private find(words: Int32Array, rowids: Float64Array): number {
    const k = this.key;
    const mask = rowids.length - 1;
    // Random UUIDs are uniform already: a mix of their words spreads them well enough.
    let slot = (Math.imul(k[0] ^ k[3], 0x9e3779b1) ^ k[1] ^ k[2]) & mask;
    for (;;) {
      if (rowids[slot] === 0) return slot;
      const at = slot * 4;
      if (words[at] === k[0] && words[at + 1] === k[1] && words[at + 2] === k[2] && words[at + 3] === k[3]) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private grow(): void {
    const oldWords = this.words;
    const oldRowids = this.rowids;
    const words = new Int32Array(oldWords.length * 2);
    const rowids = new Float64Array(oldRowids.length * 2);
    for (let s = 0; s < oldRowids.length; s++) {
      if (oldRowids[s] === 0) continue;
      this.key.set(oldWords.subarray(s * 4, s * 4 + 4));
      const slot = this.find(words, rowids);
      words.set(this.key, slot * 4);
      rowids[slot] = oldRowids[s];
    }
    this.words = words;
    this.rowids = rowids;
  }
}

/**
 * The number an id in canonical decimal stands for (no sign, no leading zero, at most 15 digits:
 * one id per number), or -1 for any other id.
 */
function decimal(id: string): number {
  const length = id.length;
  if (length === 0 || length > 15 || (length > 1 && id.charCodeAt(0) === 48)) return -1;
  let n = 0;
  for (let i = 0; i < length; i++) {
    const digit = id.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    n = n * 10 + digit;
  }
  return n;
}

/**
 * Rowids by a whole number from 0 up (see decimal). Numbers given in ascending order, as a rebuild
 * of the change feed's index gives its positions, are appended to two sorted arrays (16 bytes each,
 * found by binary search, nothing to probe); any other goes to a hash table in typed arrays like
 * RowidTable's UUIDs, kept at most half full.
 */
class NumberTable {
  private sortedKeys = new Float64Array(FIRST_SLOTS);
  private sortedRowids = new Float64Array(FIRST_SLOTS);
  private sorted = 0;
  private keys = new Float64Array(FIRST_SLOTS);
  /** 0: an empty slot. */
  private rowids = new Float64Array(FIRST_SLOTS);
  private hashed = 0;

  get size(): number {
    return this.sorted + this.hashed;
  }

  get bytes(): number {
    return this.sortedKeys.byteLength + this.sortedRowids.byteLength + this.keys.byteLength + this.rowids.byteLength;
  }

  get(n: number): number | undefined {
    const at = this.sortedAt(n);
    if (at >= 0) return this.sortedRowids[at];
    if (this.hashed === 0) return undefined;
    const slot = this.find(n, this.keys, this.rowids);
    return this.rowids[slot] === 0 ? undefined : this.rowids[slot];
  }

  set(n: number, rowid: number): void {
    const at = this.sortedAt(n);
    if (at >= 0) return void (this.sortedRowids[at] = rowid);
    if (this.sorted === 0 || n > this.sortedKeys[this.sorted - 1]) return this.append(n, rowid);
    const slot = this.find(n, this.keys, this.rowids);
    if (this.rowids[slot] === 0) {
      this.keys[slot] = n;
      this.hashed++;
    }
    this.rowids[slot] = rowid;
    if (this.hashed * 2 > this.rowids.length) this.grow();
  }

  /** As RowidTable.add. A number past every sorted one is in neither part: the hash holds only numbers that were below the last sorted one. */
  add(n: number, rowid: number): number | undefined {
    if (this.sorted === 0 || n > this.sortedKeys[this.sorted - 1]) return void this.append(n, rowid);
    const found = this.get(n);
    if (found === undefined) this.set(n, rowid);
    return found;
  }

  private append(n: number, rowid: number): void {
    if (this.sorted === this.sortedKeys.length) {
      const keys = new Float64Array(this.sorted * 2);
      const rowids = new Float64Array(this.sorted * 2);
      keys.set(this.sortedKeys);
      rowids.set(this.sortedRowids);
      this.sortedKeys = keys;
      this.sortedRowids = rowids;
    }
    this.sortedKeys[this.sorted] = n;
    this.sortedRowids[this.sorted++] = rowid;
  }

  /** Where n is among the sorted numbers, or -1. */
  private sortedAt(n: number): number {
    const keys = this.sortedKeys;
    if (this.sorted === 0 || n > keys[this.sorted - 1] || n < keys[0]) return -1;
    let low = 0;
    let high = this.sorted - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const k = keys[mid];
      if (k === n) return mid;
      if (k < n) low = mid + 1;
      else high = mid - 1;
    }
    return -1;
  }

  private find(n: number, keys: Float64Array, rowids: Float64Array): number {
    const mask = rowids.length - 1;
    // Numbers in a row (positions) spread by a multiplicative hash of their low and high words.
    let slot = (Math.imul((n % 0x100000000) ^ Math.floor(n / 0x100000000), 0x9e3779b1) >>> 0) & mask;
    for (;;) {
      if (rowids[slot] === 0 || keys[slot] === n) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private grow(): void {
    const keys = new Float64Array(this.keys.length * 2);
    const rowids = new Float64Array(this.rowids.length * 2);
    for (let s = 0; s < this.rowids.length; s++) {
      if (this.rowids[s] === 0) continue;
      const slot = this.find(this.keys[s], keys, rowids);
      keys[slot] = this.keys[s];
      rowids[slot] = this.rowids[s];
    }
    this.keys = keys;
    this.rowids = rowids;
  }
}
