"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
var __param = (this && this.__param) || function (paramIndex, decorator) {
    return function (target, key) { decorator(target, key, paramIndex); }
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.ProfilesModule = void 0;
const common_1 = require("@nestjs/common");
const record_eraser_1 = require("../erasure/record-eraser");
const read_store_port_1 = require("../read-store/read-store.port");
const storage_module_1 = require("../storage/storage.module");
const profile_projection_1 = require("./profile.projection");
const event_store_port_1 = require("../event-store/event-store.port");
const projections_service_1 = require("../projections/projections.service");
const idempotent_creates_1 = require("../idempotency/idempotent-creates");
const record_writer_1 = require("../records/record-writer");
const profile_commands_1 = require("./profile.commands");
const profile_decider_1 = require("./profile.decider");
const profile_queries_1 = require("./profile.queries");
const profiles_controller_1 = require("./profiles.controller");
const slug_reservations_1 = require("./slug-reservations");
let ProfilesModule = class ProfilesModule {
    constructor(eraser) {
        this.eraser = eraser;
    }
    async onApplicationBootstrap() {
        await this.eraser.finishPending().catch((error) => new common_1.Logger('ProfilesModule').error(`Could not finish interrupted erasures: ${error.message}`));
    }
};
exports.ProfilesModule = ProfilesModule;
exports.ProfilesModule = ProfilesModule = __decorate([
    (0, common_1.Module)({
        controllers: [profiles_controller_1.ProfilesController],
        providers: [
            idempotent_creates_1.IdempotentCreates,
            {
                provide: profile_commands_1.PROFILE_WRITER,
                useFactory: (eventStore, projections) => new record_writer_1.RecordWriter(profile_decider_1.PROFILE, eventStore, projections),
                inject: [event_store_port_1.EVENT_STORE, projections_service_1.ProjectionsService],
            },
            {
                provide: slug_reservations_1.SlugReservations,
                useFactory: (eventStore, profiles) => new slug_reservations_1.SlugReservations(eventStore, profiles),
                inject: [event_store_port_1.EVENT_STORE, profile_commands_1.PROFILE_WRITER],
            },
            {
                provide: profile_commands_1.PROFILE_ERASER,
                useFactory: (writer, keys, readStore) => new record_eraser_1.RecordEraser(profile_decider_1.PROFILE, profile_projection_1.profileProjection.schema.name, writer, keys, readStore),
                inject: [profile_commands_1.PROFILE_WRITER, storage_module_1.DATA_KEYS, read_store_port_1.READ_STORE],
            },
            profile_commands_1.CreateProfileHandler,
            profile_commands_1.UpdateProfileHandler,
            profile_commands_1.DeleteProfileHandler,
            profile_commands_1.EraseProfileHandler,
            profile_queries_1.GetProfileHandler,
            profile_queries_1.ListProfilesHandler,
        ],
    }),
    __param(0, (0, common_1.Inject)(profile_commands_1.PROFILE_ERASER)),
    __metadata("design:paramtypes", [record_eraser_1.RecordEraser])
], ProfilesModule);
//# sourceMappingURL=profiles.module.js.map