import { randomFillSync } from 'node:crypto';

/** Random bytes for IVs and keys, drawn 4 KiB at a time: a call into OpenSSL for each 12 bytes cost more than the cipher itself. */
const randomPool = Buffer.alloc(4096);
let randomUsed = randomPool.length;

export function randomBytesPooled(size: number): Buffer {
  if (randomUsed + size > randomPool.length) {
    randomFillSync(randomPool);
    randomUsed = 0;
  }
  // A buffer of its own, not a slice of Node's shared pool, where a key's bytes would outlive it.
  const bytes = Buffer.allocUnsafeSlow(size);
  randomPool.copy(bytes, 0, randomUsed, randomUsed + size);
  randomPool.fill(0, randomUsed, randomUsed + size); // a key handed out leaves no copy here
  randomUsed += size;
  return bytes;
}
