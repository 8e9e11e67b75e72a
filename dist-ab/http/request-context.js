"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Ctx = void 0;
const common_1 = require("@nestjs/common");
exports.Ctx = (0, common_1.createParamDecorator)((_, ctx) => {
    const req = ctx.switchToHttp().getRequest();
    if (!req.accountId || !req.requestId)
        throw new Error('Request context read on an unauthenticated route');
    return { accountId: req.accountId, requestId: req.requestId };
});
//# sourceMappingURL=request-context.js.map