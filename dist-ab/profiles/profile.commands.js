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
exports.EraseProfileHandler = exports.DeleteProfileHandler = exports.UpdateProfileHandler = exports.CreateProfileHandler = exports.EraseProfileCommand = exports.DeleteProfileCommand = exports.UpdateProfileCommand = exports.CreateProfileCommand = exports.PROFILE_ERASER = exports.PROFILE_WRITER = void 0;
const common_1 = require("@nestjs/common");
const cqrs_1 = require("@nestjs/cqrs");
const node_crypto_1 = require("node:crypto");
const errors_1 = require("../errors");
const record_writer_1 = require("../records/record-writer");
const profile_decider_1 = require("./profile.decider");
const slug_reservations_1 = require("./slug-reservations");
exports.PROFILE_WRITER = Symbol('ProfileWriter');
exports.PROFILE_ERASER = Symbol('ProfileEraser');
class CreateProfileCommand extends cqrs_1.Command {
    constructor(context, id, fields) {
        super();
        this.context = context;
        this.id = id;
        this.fields = fields;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.CreateProfileCommand = CreateProfileCommand;
class UpdateProfileCommand extends cqrs_1.Command {
    constructor(context, id, fields, precondition) {
        super();
        this.context = context;
        this.id = id;
        this.fields = fields;
        this.precondition = precondition;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.UpdateProfileCommand = UpdateProfileCommand;
class DeleteProfileCommand extends cqrs_1.Command {
    constructor(context, id, precondition) {
        super();
        this.context = context;
        this.id = id;
        this.precondition = precondition;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.DeleteProfileCommand = DeleteProfileCommand;
class EraseProfileCommand extends cqrs_1.Command {
    constructor(context, id) {
        super();
        this.context = context;
        this.id = id;
        this.commandId = (0, node_crypto_1.randomUUID)();
    }
}
exports.EraseProfileCommand = EraseProfileCommand;
class SlugAwareHandler {
    constructor(profiles, slugs) {
        this.profiles = profiles;
        this.slugs = slugs;
    }
    async writeWithSlugs(id, command, decide, newSlug) {
        const metadata = (0, record_writer_1.eventMetadata)(command.context, command.commandId);
        const touched = new Set();
        let lastAppended;
        let outcomeKnown = false;
        try {
            const written = await this.profiles.write(id, command.context, command.commandId, async (state) => {
                const events = await decide(state);
                const current = state?.fields ?? {};
                const next = events.length ? newSlug(current) : undefined;
                if (next !== undefined && (0, profile_decider_1.slugKey)(next) !== (0, profile_decider_1.slugKey)(current.slug ?? '')) {
                    if (current.slug)
                        touched.add(current.slug);
                    if (next) {
                        touched.add(next);
                        lastAppended = await this.slugs.reserve(next, id, metadata);
                    }
                }
                return events;
            }, { precondition: command.precondition, isNew: command.isNew });
            if (written)
                lastAppended = written.position;
            outcomeKnown = true;
        }
        catch (error) {
            outcomeKnown = error instanceof errors_1.ApiError;
            throw error;
        }
        finally {
            if (outcomeKnown && lastAppended)
                for (const slug of touched)
                    await this.slugs.release(slug, id, metadata, lastAppended);
        }
    }
}
let CreateProfileHandler = class CreateProfileHandler extends SlugAwareHandler {
    constructor(profiles, slugs) {
        super(profiles, slugs);
    }
    async execute(command) {
        const { context, commandId, id, fields } = command;
        await this.writeWithSlugs(id, { context, commandId, isNew: true }, (state) => (0, profile_decider_1.decideCreateProfile)(state, fields), () => fields.slug);
    }
};
exports.CreateProfileHandler = CreateProfileHandler;
exports.CreateProfileHandler = CreateProfileHandler = __decorate([
    (0, cqrs_1.CommandHandler)(CreateProfileCommand),
    __param(0, (0, common_1.Inject)(exports.PROFILE_WRITER)),
    __metadata("design:paramtypes", [record_writer_1.RecordWriter, slug_reservations_1.SlugReservations])
], CreateProfileHandler);
let UpdateProfileHandler = class UpdateProfileHandler extends SlugAwareHandler {
    constructor(profiles, slugs) {
        super(profiles, slugs);
    }
    async execute(command) {
        const { context, id, fields } = command;
        await this.writeWithSlugs(id, command, (state) => (0, profile_decider_1.decideUpdateProfile)(state, context.accountId, fields), () => fields.slug);
    }
};
exports.UpdateProfileHandler = UpdateProfileHandler;
exports.UpdateProfileHandler = UpdateProfileHandler = __decorate([
    (0, cqrs_1.CommandHandler)(UpdateProfileCommand),
    __param(0, (0, common_1.Inject)(exports.PROFILE_WRITER)),
    __metadata("design:paramtypes", [record_writer_1.RecordWriter, slug_reservations_1.SlugReservations])
], UpdateProfileHandler);
let DeleteProfileHandler = class DeleteProfileHandler extends SlugAwareHandler {
    constructor(profiles, slugs) {
        super(profiles, slugs);
    }
    async execute(command) {
        await this.writeWithSlugs(command.id, command, (state) => (0, profile_decider_1.decideDeleteProfile)(state, command.context.accountId), () => '');
    }
};
exports.DeleteProfileHandler = DeleteProfileHandler;
exports.DeleteProfileHandler = DeleteProfileHandler = __decorate([
    (0, cqrs_1.CommandHandler)(DeleteProfileCommand),
    __param(0, (0, common_1.Inject)(exports.PROFILE_WRITER)),
    __metadata("design:paramtypes", [record_writer_1.RecordWriter, slug_reservations_1.SlugReservations])
], DeleteProfileHandler);
let EraseProfileHandler = class EraseProfileHandler {
    constructor(eraser, slugs) {
        this.eraser = eraser;
        this.slugs = slugs;
    }
    async execute({ context, id, commandId }) {
        await this.eraser.erase(id, context, commandId, async (before) => {
            if (before.fields.slug)
                await this.slugs.release(before.fields.slug, id, (0, record_writer_1.eventMetadata)(context, commandId));
        });
    }
};
exports.EraseProfileHandler = EraseProfileHandler;
exports.EraseProfileHandler = EraseProfileHandler = __decorate([
    (0, cqrs_1.CommandHandler)(EraseProfileCommand),
    __param(0, (0, common_1.Inject)(exports.PROFILE_ERASER)),
    __metadata("design:paramtypes", [Function, slug_reservations_1.SlugReservations])
], EraseProfileHandler);
//# sourceMappingURL=profile.commands.js.map