import { Controller, Get, Global, Inject, Module, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse } from '@nestjs/swagger';
import type { Response } from 'express';
import { APP_CONFIG, AppConfig } from '../config/config';
import { ApiOperations } from '../docs/openapi';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { Metrics } from '../metrics/metrics';
import { READ_STORE, ReadGenerations } from '../read-store/read-store.port';

/** `GET /metrics`: Prometheus text, outside /v1 and without a token, as scrapers expect. */
@ApiOperations()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    private readonly projections: ProjectionsService,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadGenerations,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Prometheus metrics', description: 'No token. The metrics are listed in docs/operators.md.' })
  @ApiResponse({
    status: 200,
    description: 'Prometheus text format 0.0.4',
    content: {
      'text/plain; version=0.0.4; charset=utf-8': {
        schema: { type: 'string' },
        example:
          '# HELP http_requests_total HTTP requests answered, by method, route template and status\n# TYPE http_requests_total counter\n' +
          'http_requests_total{method="GET",route="/v1/customers",status="200",service_instance="host-1:4242:5f3a9c"} 1532\n' +
          '# HELP projection_lag How far the projection\'s checkpoint is behind the event store\'s newest event, in commit positions (events, for SQLite)\n# TYPE projection_lag gauge\nprojection_lag{projection="customers",service_instance="host-1:4242:5f3a9c"} 0\n',
      },
    },
  })
  async scrape(@Res() res: Response): Promise<void> {
    // Projection figures are read at scrape time: they are states, not events to count. With the
    // event store unreachable the scrape still answers, without the lag: that is when metrics matter.
    // (/health/ready names the failure and logs it.)
    const head = await this.eventStore.headPosition().catch(() => undefined);
    for (const projector of this.projections.projectors) {
      const labels = { projection: projector.projection.name };
      const checkpoint = projector.checkpoint.commit;
      this.metrics.projectionCheckpoint.set(labels, Number(checkpoint));
      this.metrics.projectionFolding.set(labels, projector.folding ? 1 : 0);
      // Absent where the event store cannot count events between positions (EventStoreDB).
      const lag = head === undefined ? null : this.eventStore.eventsBetween(projector.checkpoint, head);
      if (lag === null) this.metrics.projectionLag.remove(labels);
      else this.metrics.projectionLag.set(labels, lag);
      // From the store, as every instance sees it (the lease holder parks); left as it was when the store does not answer.
      const name = projector.projection.schema.name;
      await this.readStore
        .status(name)
        .then(({ live }) => this.readStore.parkedCount(name, live.generation))
        .then(({ events }) => this.metrics.projectionParked.set({ read_model: projector.projection.name }, events))
        .catch(() => undefined);
    }
    const text = await this.metrics.registry.metrics();
    res.status(200).setHeader('Content-Type', this.metrics.registry.contentType);
    res.end(text);
  }
}

@Global()
@Module({
  controllers: [MetricsController],
  providers: [{ provide: Metrics, useFactory: (config: AppConfig) => new Metrics(config.instanceId), inject: [APP_CONFIG] }],
  exports: [Metrics],
})
export class MetricsModule {}
