import { PipeTransform } from '@nestjs/common';
import { notFound } from '../errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An id that is not a UUID cannot name a record: 404, the same answer as an unknown id. */
export class RecordIdPipe implements PipeTransform<string, string> {
  constructor(private readonly label: string) {}

  transform(value: string): string {
    if (!UUID.test(value)) throw notFound(this.label);
    return value.toLowerCase();
  }
}
