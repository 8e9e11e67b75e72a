import { Controller, Get, Inject, Logger, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse } from '@nestjs/swagger';
import type { Response } from 'express';
import { NOT_READY, READY } from '../docs/examples';
import { ApiOperations } from '../docs/openapi';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { sendJson } from '../http/json-response';
import { formatPosition } from '../projections/positions';
import { PoisonEventError } from '../projections/fold-batch';
import { ProjectionsService } from '../projections/projections.service';
import { READ_STORE, ReadGenerations } from '../read-store/read-store.port';
import { WRITE_FAILURE_REMEMBERED_MS, WriteFailures } from '../storage/write-failures';

/** Parked streams readiness names, at most. */
export const READY_PARKED_NAMED = 10;

/** What /health/ready answers, 200 or 503 alike. */
const READINESS = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'head', 'projections', 'problems'],
  properties: {
    status: { type: 'string', enum: ['ready', 'unavailable'] },
    head: { type: 'string', nullable: true, description: "the event store's newest position; null when it is unreachable" },
    projections: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'state', 'folding', 'checkpoint', 'lag', 'failure'],
        properties: {
          name: { type: 'string' },
          state: { type: 'string', enum: ['starting', 'running', 'failed', 'stopped'] },
          folding: { type: 'boolean', description: 'true on the one instance that holds the lease and folds; false on those that follow it' },
          checkpoint: { type: 'string', description: 'the position of the last event folded; "0" before any' },
          lag: { type: 'integer', nullable: true, description: 'events behind the head' },
          failure: {
            type: 'object',
            nullable: true,
            description: 'the event it stopped on, if it met one it cannot fold',
            required: ['streamId', 'revision', 'error'],
            properties: { streamId: { type: 'string' }, revision: { type: 'integer' }, error: { type: 'string' } },
          },
          parked: {
            type: 'object',
            description:
              'streams parked at an event the read model cannot fold (with POISON_EVENTS=park): every other stream stays current, so the service stays ready. `streamIds` names the first ten, oldest parked first',
            required: ['streams', 'events', 'streamIds'],
            properties: { streams: { type: 'integer' }, events: { type: 'integer' }, streamIds: { type: 'array', items: { type: 'string' } } },
          },
        },
      },
    },
    problems: { type: 'array', items: { type: 'string' }, description: 'each reason it is not ready; empty when ready' },
  },
};

/** For monitoring and orchestrators: outside /v1, no token. */
@ApiOperations()
@Controller('health')
export class HealthController {
  private readonly logger = new Logger(HealthController.name);

  constructor(
    private readonly projections: ProjectionsService,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadGenerations,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly writes: WriteFailures,
  ) {}

  /** The process is up and answering. */
  @Get('live')
  @ApiOperation({ summary: 'Liveness: the process is up', description: 'No token. Always 200 while the process answers.' })
  @ApiResponse({
    status: 200,
    description: 'the process is up',
    content: {
      'application/json; charset=UTF-8': { schema: { type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } }, example: { status: 'ok' } },
    },
  })
  live() {
    return { status: 'ok' };
  }

  /**
   * Ready to serve: both stores answer, and every projection is running, has reached the head the
   * app found at start and, where the event store can count events (SQLite), is at most
   * READY_MAX_LAG_EVENTS behind its head, and no write to a store has failed for want of it (down,
   * or its disk full) in the last WRITE_FAILURE_REMEMBERED_MS with none succeeding since (nor, for
   * a full disk under the SQLite files, a probe of it: see WriteFailures). 503 otherwise, naming
   * each problem.
   */
  @Get('ready')
  @ApiOperation({
    summary: 'Readiness: both stores answer and the read models are caught up',
    description: `No token. 503 while a store is unreachable, its writes fail (down or out of disk space; until a write succeeds, or for want of space on the embedded stores' disk until a probe of it does, for at most ${WRITE_FAILURE_REMEMBERED_MS / 1000} s after the last failure), a read model has stopped, has not yet reached the events stored before the start, or is more than READY_MAX_LAG_EVENTS behind; problems names each.`,
  })
  @ApiResponse({ status: 200, description: 'ready to serve', content: { 'application/json; charset=UTF-8': { schema: READINESS, example: READY } } })
  @ApiResponse({
    status: 503,
    description: 'not ready: see problems',
    content: { 'application/json; charset=UTF-8': { schema: READINESS, example: NOT_READY } },
  })
  async ready(@Res() res: Response): Promise<void> {
    const problems: string[] = [];
    const head = await this.ping('event store', problems, () => this.eventStore.headPosition());
    // With each read model's live generation, its parked streams: named, not a problem.
    const parked = await this.ping('read store', problems, () =>
      Promise.all(
        this.projections.projectors.map(async (p) => {
          const name = p.projection.schema.name;
          const { live } = await this.readStore.status(name);
          const [count, first] = await Promise.all([
            this.readStore.parkedCount(name, live.generation),
            this.readStore.parked(name, live.generation, READY_PARKED_NAMED),
          ]);
          return { ...count, streamIds: first.map((s) => s.streamId) };
        }),
      ),
    );
    const projections = this.projections.projectors.map((p, i) => {
      // Null when the store cannot count events between positions (EventStoreDB): then lag is unknown, not checked.
      const lag = head ? this.eventStore.eventsBetween(p.checkpoint, head) : null;
      const failure = p.failure instanceof PoisonEventError ? { streamId: p.failure.streamId, revision: p.failure.revision, error: p.failure.reason } : null;
      if (failure) problems.push(`projection ${p.projection.name} stopped on ${failure.streamId}@${failure.revision}`);
      else if (p.state !== 'running') problems.push(`projection ${p.projection.name} is ${p.state}`);
      if (!failure && !p.caughtUp) {
        // Reads and lists answer 503 meanwhile (ProjectionsService.assertCaughtUp).
        const toGo = p.eventsToStartHead;
        problems.push(`projection ${p.projection.name} is catching up with the events stored before the start${toGo === null ? '' : ` (${toGo} to go)`}`);
      }
      if (lag !== null && lag > this.config.readyMaxLagEvents) {
        problems.push(`projection ${p.projection.name} is ${lag} events behind (bound ${this.config.readyMaxLagEvents})`);
      }
      const parkedHere = parked?.[i];
      return {
        name: p.projection.name,
        state: p.state,
        folding: p.folding,
        checkpoint: formatPosition(p.checkpoint),
        lag,
        failure,
        ...(parkedHere && parkedHere.streams > 0 ? { parked: parkedHere } : {}),
      };
    });
    // A store that answers reads may still refuse writes (its disk full): the writes say so.
    for (const { store, full, secondsAgo } of await this.writes.current()) {
      problems.push(`writes to the ${store} are failing${full ? ' for want of disk space' : ''} (the last ${secondsAgo} s ago)`);
    }
    const ready = problems.length === 0;
    sendJson(res, ready ? 200 : 503, {
      status: ready ? 'ready' : 'unavailable',
      head: head ? formatPosition(head) : null,
      projections,
      problems,
    });
  }

  /** Runs a store call as a ping; a failure becomes a problem (its details go to the log only). */
  private async ping<T>(store: string, problems: string[], call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (error) {
      this.logger.warn(`Readiness: ${store} unreachable: ${(error as Error).message}`);
      problems.push(`${store} unreachable`);
      return null;
    }
  }
}
