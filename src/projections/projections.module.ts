import { DynamicModule, Global, Module } from '@nestjs/common';
import { Projection, PROJECTIONS } from './projection';
import { ProjectionsService } from './projections.service';

@Global()
@Module({})
export class ProjectionsModule {
  static forRoot(projections: Projection[]): DynamicModule {
    return {
      module: ProjectionsModule,
      providers: [{ provide: PROJECTIONS, useValue: projections }, ProjectionsService],
      exports: [ProjectionsService],
    };
  }
}
