import { Controller, Get, Query } from '@nestjs/common';
import { ApiError } from '../errors';
import { envelope } from './envelope';
import { Ctx, RequestContext } from './request-context';

const MAX_BYTES = 64 * 1024;
/** What a constant body of a given size costs to build is paid once, not on every request. */
const bodies = new Map<number, ReturnType<typeof envelope>>();

/**
 * Bench-only, registered when BENCH_CEILING=1: the fastest route this app can have. It passes the same
 * middleware (request id, access token), pipes and filter as every /v1 route and answers a constant
 * envelope of `bytes` bytes, so `npm run bench` can set each real route against it.
 */
@Controller('v1/bench')
export class BenchCeilingController {
  @Get('ceiling')
  ceiling(@Ctx() _ctx: RequestContext, @Query('bytes') bytes: string) {
    const size = Number(bytes);
    if (!Number.isInteger(size) || size < 0 || size > MAX_BYTES) {
      throw new ApiError('VALIDATION_FAILED', 'bytes must be an integer from 0 to 65536.', [{ field: 'bytes', message: 'out of range' }]);
    }
    let body = bodies.get(size);
    if (!body) {
      const empty = JSON.stringify(envelope([{ padding: '' }], 200)).length;
      body = envelope([{ padding: 'x'.repeat(Math.max(0, size - empty)) }], 200);
      bodies.set(size, body);
    }
    return body;
  }
}
