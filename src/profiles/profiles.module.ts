import { APP_CONFIG, AppConfig } from '../config/config';
import { Inject, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';
import { RecordEraser } from '../records/record-eraser';
import { READ_STORE, ReadDocuments } from '../read-store/read-store.port';
import { profileProjection } from './profile.projection';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { IdempotentCreates } from '../idempotency/idempotent-creates';
import { RecordWriter } from '../records/record-writer';
import { CreateProfileHandler, DeleteProfileHandler, EraseProfileHandler, PROFILE_ERASER, PROFILE_WRITER, UpdateProfileHandler } from './profile.commands';
import { PROFILE } from './profile.decider';
import { GetProfileHandler, ListProfilesHandler, WrittenProfileHandler } from './profile.queries';
import { ProfilesController } from './profiles.controller';
import { SlugReservations } from './slug-reservations';

@Module({
  controllers: [ProfilesController],
  providers: [
    IdempotentCreates,
    {
      provide: PROFILE_WRITER,
      useFactory: (eventStore: EventStore, projections: ProjectionsService, keys: DataKeys, config: AppConfig) =>
        new RecordWriter(PROFILE, eventStore, projections, keys, { keepAtMost: config.recordCacheSize }),
      inject: [EVENT_STORE, ProjectionsService, DATA_KEYS, APP_CONFIG],
    },
    {
      provide: SlugReservations,
      useFactory: (eventStore: EventStore, profiles: RecordWriter) => new SlugReservations(eventStore, profiles),
      inject: [EVENT_STORE, PROFILE_WRITER],
    },
    {
      provide: PROFILE_ERASER,
      useFactory: (writer: RecordWriter, keys: DataKeys, readStore: ReadDocuments) =>
        new RecordEraser(PROFILE, profileProjection.schema.name, writer, keys, readStore),
      inject: [PROFILE_WRITER, DATA_KEYS, READ_STORE],
    },
    CreateProfileHandler,
    UpdateProfileHandler,
    DeleteProfileHandler,
    EraseProfileHandler,
    GetProfileHandler,
    ListProfilesHandler,
    WrittenProfileHandler,
  ],
})
export class ProfilesModule implements OnApplicationBootstrap {
  constructor(@Inject(PROFILE_ERASER) private readonly eraser: RecordEraser) {}

  /** Erasures a stop interrupted are finished before the service answers (their slugs free themselves: see SlugReservations). */
  async onApplicationBootstrap(): Promise<void> {
    await this.eraser
      .finishPending()
      .catch((error) => new Logger('ProfilesModule').error(`Could not finish interrupted erasures: ${(error as Error).message}`));
  }
}
