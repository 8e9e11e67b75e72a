import { Logger } from '@nestjs/common';

// Parts of the service run without an app in unit tests (a projector, an eraser): Nest's default
// logger would print their lines into the run's output. Tests that check a line spy on Logger's
// methods, which are called all the same.
Logger.overrideLogger(false);
