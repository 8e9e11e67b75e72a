import { Module } from '@nestjs/common';
import { RecordAsOfHandler, RecordHistoryHandler } from './audit.queries';

/** History and as-of reads of every kind of record, folded from their streams. */
@Module({ providers: [RecordHistoryHandler, RecordAsOfHandler] })
export class AuditModule {}
