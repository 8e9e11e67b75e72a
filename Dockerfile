# syntax=docker/dockerfile:1
# The service for production: EventStoreDB and MongoDB come from the environment (see docker-compose.yml).
# better-sqlite3 (the embedded default, always installed) is prebuilt inside its package: no compiler.

# Build stage: every dependency, then the TypeScript build.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Final stage: production dependencies only and the built code.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/app/data \
    ERASURE_LOG=/app/erasures/erasures.ndjson
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# The data directory keeps the generated access token (and the SQLite file when a store is embedded).
RUN mkdir -p /app/data /app/erasures && chown node:node /app/data /app/erasures
USER node
EXPOSE 3000
# No Node flags here: the service sizes its heap, glibc's arenas and its caches to the container's
# memory limit by itself (docs/operators.md, Memory); flags given in NODE_OPTIONS win over its own.
CMD ["node", "dist/main.js"]
