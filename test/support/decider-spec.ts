import type { DomainEvent, StoredEvent } from '../../src/event-store/event-store.port';
import type { Decider } from '../../src/records/record';

/** Where the given events are stored, and by whom: the fold keeps the record id and its account. */
export interface Stream {
  streamId: string;
  accountId: string;
}

/**
 * The events as the store hands them back, revisions from 0: positions 100 on, happened at a fixed
 * time (1_700_000_000.5 s), so a fold's `seq` and `created` are known.
 */
export function stored<Event extends DomainEvent>(events: Event[], { streamId, accountId }: Stream): StoredEvent<Event>[] {
  return events.map((event, revision) => ({
    ...event,
    id: `e${revision}`,
    streamId,
    revision,
    position: { commit: BigInt(100 + revision), prepare: BigInt(100 + revision) },
    metadata: { accountId, correlationId: 'c', causationId: 'c', schemaVersion: 1, occurredAt: new Date(1_700_000_000_500).toISOString() },
    recordedAt: new Date(1_700_000_000_500),
  }));
}

/**
 * Given/when/then on a decider, after Emmett's DeciderSpecification: the given events are folded with
 * the decider's own evolve, then the command is decided on that state.
 *
 *   spec.given([created]).when(update).then([updated]);
 */
export function deciderSpec<State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>, stream: Stream) {
  const fold = (events: Event[]) => stored(events, stream).reduce((state, event) => decider.evolve(state, event), decider.initialState());
  return {
    /** The state the events leave, for what the fold itself must show. */
    fold,
    given: (events: Event[]) => ({
      when: (command: Command) => {
        const decided = () => decider.decide(command, fold(events));
        return {
          then: (expected: Event[]) => expect(decided()).toEqual(expected),
          thenNothingHappened: () => expect(decided()).toEqual([]),
          /** The refusal thrown has (at least) these properties: `{ code: 'NOT_FOUND' }`. */
          thenThrows: (refusal: object) => expect(decided).toThrow(expect.objectContaining(refusal)),
        };
      },
    }),
  };
}
