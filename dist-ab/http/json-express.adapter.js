"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.JsonExpressAdapter = void 0;
const platform_express_1 = require("@nestjs/platform-express");
const http_server_1 = require("./http-server");
const json_response_1 = require("./json-response");
class JsonExpressAdapter extends platform_express_1.ExpressAdapter {
    constructor(limits, log) {
        super();
        this.limits = limits;
        this.log = log;
        this.lateRoutes = [];
    }
    initHttpServer() {
        this.httpServer = (0, http_server_1.createHttpServer)(this.getInstance(), this.limits, this.log);
    }
    addAfterRoutes(add) {
        this.lateRoutes.push(add);
    }
    setNotFoundHandler(...args) {
        for (const add of this.lateRoutes.splice(0))
            add();
        return super.setNotFoundHandler(...args);
    }
    reply(response, body, statusCode) {
        (0, json_response_1.sendJson)(response, statusCode ?? response.statusCode, body ?? null);
    }
}
exports.JsonExpressAdapter = JsonExpressAdapter;
//# sourceMappingURL=json-express.adapter.js.map