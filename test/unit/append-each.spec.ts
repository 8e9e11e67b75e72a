import { appendEach } from '../../src/event-store/append-each';
import { WrongExpectedRevisionError, type ExpectedRevision, type NewEvent } from '../../src/event-store/event-store.port';

const event = (): NewEvent => ({ id: 'e', type: 'T', data: {}, metadata: { accountId: 'a', correlationId: 'c', causationId: 'c' } });

describe('appendEach (appendToStreams on a server store)', () => {
  it('sends the appends to one stream one after the other, in the order given, while other streams go beside them', async () => {
    // A server that answers the first append it gets late: sent together, a later append to the same stream would land first.
    const revisions = new Map<string, number>();
    const sent: string[] = [];
    const appendOne = async (streamId: string, _events: NewEvent[], expected: ExpectedRevision) => {
      sent.push(`${streamId}@${String(expected)}`);
      await new Promise((resolve) => setTimeout(resolve, sent.length === 1 ? 50 : 0));
      const current = revisions.get(streamId) ?? -1;
      if ((expected === 'no_stream' ? -1 : expected) !== current) throw new WrongExpectedRevisionError(streamId, expected, current);
      revisions.set(streamId, current + 1);
      return { revision: current + 1, position: { commit: BigInt(sent.length), prepare: BigInt(sent.length) } };
    };
    const outcomes = await appendEach(
      [
        { streamId: 's', events: [event()], expected: 'no_stream' },
        { streamId: 's', events: [event()], expected: 0 },
        { streamId: 't', events: [event()], expected: 'no_stream' },
      ],
      appendOne,
    );
    expect(outcomes.map((o) => ('result' in o ? o.result.revision : (o.error as Error).name))).toEqual([0, 1, 0]);
    // t's append went while s's first was under way; s's second only after it.
    expect(sent).toEqual(['s@no_stream', 't@no_stream', 's@0']);
  });
});
