import { Module } from '@nestjs/common';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { IdempotentCreates } from '../idempotency/idempotent-creates';
import { RecordWriter } from '../records/record-writer';
import { CreateProfileHandler, DeleteProfileHandler, PROFILE_WRITER, UpdateProfileHandler } from './profile.commands';
import { PROFILE } from './profile.decider';
import { GetProfileHandler, ListProfilesHandler } from './profile.queries';
import { ProfilesController } from './profiles.controller';
import { SlugReservations } from './slug-reservations';

@Module({
  controllers: [ProfilesController],
  providers: [
    IdempotentCreates,
    {
      provide: PROFILE_WRITER,
      useFactory: (eventStore: EventStore, projections: ProjectionsService) => new RecordWriter(PROFILE, eventStore, projections),
      inject: [EVENT_STORE, ProjectionsService],
    },
    {
      provide: SlugReservations,
      useFactory: (eventStore: EventStore, profiles: RecordWriter) => new SlugReservations(eventStore, profiles),
      inject: [EVENT_STORE, PROFILE_WRITER],
    },
    CreateProfileHandler,
    UpdateProfileHandler,
    DeleteProfileHandler,
    GetProfileHandler,
    ListProfilesHandler,
  ],
})
export class ProfilesModule {}
