import { Controller, Get, Inject, Logger, Res } from '@nestjs/common';
import type { Response } from 'express';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { sendJson } from '../http/json-response';
import { formatPosition } from '../projections/positions';
import { PoisonEventError } from '../projections/projector';
import { ProjectionsService } from '../projections/projections.service';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';

/** For monitoring and orchestrators: outside /v1, no token. */
@Controller('health')
export class HealthController {
  private readonly logger = new Logger(HealthController.name);

  constructor(
    private readonly projections: ProjectionsService,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** The process is up and answering. */
  @Get('live')
  live() {
    return { status: 'ok' };
  }

  /**
   * Ready to serve: both stores answer, and every projection is running and, where the event
   * store can count events (SQLite), at most READY_MAX_LAG_EVENTS behind its head. 503 otherwise,
   * naming each problem.
   */
  @Get('ready')
  async ready(@Res() res: Response): Promise<void> {
    const problems: string[] = [];
    const head = await this.ping('event store', problems, () => this.eventStore.headPosition());
    await this.ping('read store', problems, () =>
      Promise.all(this.projections.projectors.map((p) => this.readStore.status(p.projection.schema.name))),
    );
    const projections = this.projections.projectors.map((p) => {
      // Null when the store cannot count events between positions (EventStoreDB): then lag is unknown, not checked.
      const lag = head ? this.eventStore.eventsBetween(p.checkpoint, head) : null;
      const failure =
        p.failure instanceof PoisonEventError
          ? { streamId: p.failure.streamId, revision: p.failure.revision, error: p.failure.reason }
          : null;
      if (failure) problems.push(`projection ${p.projection.name} stopped on ${failure.streamId}@${failure.revision}`);
      else if (p.state !== 'running') problems.push(`projection ${p.projection.name} is ${p.state}`);
      if (lag !== null && lag > this.config.readyMaxLagEvents) {
        problems.push(`projection ${p.projection.name} is ${lag} events behind (bound ${this.config.readyMaxLagEvents})`);
      }
      return { name: p.projection.name, state: p.state, checkpoint: formatPosition(p.checkpoint), lag, failure };
    });
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
