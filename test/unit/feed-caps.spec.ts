import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { FeedCaps } from '../../src/feed/feed-caps';
import { ApiError } from '../../src/http/api-error';

/** A response as the caps see it: it closes once, whichever way (answered, the consumer gone, the stream ended at shutdown or on a store failure). */
class FakeResponse extends EventEmitter {
  closed = false;
  close(): void {
    this.closed = true;
    this.emit('close');
  }
}
const response = () => new FakeResponse() as FakeResponse & Response;

describe('FeedCaps', () => {
  const refusal = (hold: () => void) => {
    try {
      hold();
    } catch (error) {
      return error as ApiError;
    }
    throw new Error('not refused');
  };

  it('refuses a token past its cap, and an account past its own over its tokens, naming the cap; counts each open request once', () => {
    let open = 0;
    const caps = new FeedCaps(2, 3, (change) => (open += change));
    caps.hold('token-1', 'acme', response());
    caps.hold('token-1', 'acme', response());
    const token = refusal(() => caps.hold('token-1', 'acme', response()));
    expect({ code: token.code, retryAfter: token.retryAfter, message: token.message }).toEqual({
      code: 'RATE_LIMITED',
      retryAfter: 5,
      message: 'This access token has 2 change-feed event streams or long-polls open, the most allowed at once: close one before opening another.',
    });
    caps.hold('token-2', 'acme', response());
    expect(refusal(() => caps.hold('token-2', 'acme', response())).message).toBe(
      'This account has 3 change-feed event streams or long-polls open over its access tokens, the most allowed at once: close one before opening another.',
    );
    caps.hold('token-3', 'globex', response()); // another account's are its own
    expect(open).toBe(4);
  });

  it('frees a slot when its response closes, and one already closed at once', () => {
    let open = 0;
    const caps = new FeedCaps(1, 1, (change) => (open += change));
    const first = response();
    caps.hold('token-1', 'acme', first);
    first.close();
    expect(open).toBe(0);
    const gone = response();
    gone.close(); // the consumer left while its request was on its way
    caps.hold('token-1', 'acme', gone);
    expect(open).toBe(0);
    caps.hold('token-1', 'acme', response());
    expect(open).toBe(1);
  });
});
