/** Shared by both projects. ts-jest transpiles only (tsconfig.json's isolatedModules): `npm test` checks the types once, in `npm run typecheck`. */
const common = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    '^.+\\.js$': '<rootDir>/test/support/esm-to-cjs.js',
  },
  transformIgnorePatterns: ['/node_modules/(?!@nestjs/)'],
  setupFilesAfterEnv: ['<rootDir>/test/support/quiet-nest.ts', '<rootDir>/test/support/observe-statuses.ts'],
};

/** Suites under test/ that the WORKERS=2 project leaves out (see there). */
const PER_REQUEST_SUITES = [
  'e2e/cli',
  'e2e/cli-import',
  'e2e/cli-verify',
  'e2e/cli-feed-tail',
  'e2e/cli-erasures',
  'e2e/backup-restore',
  'e2e/browser',
  'e2e/openapi',
  'e2e/typed-client',
  'e2e/docs-walkthrough',
  'e2e/docs-feed-consumer',
  'e2e/cors',
  'e2e/http-errors',
  'e2e/single-values',
  'e2e/feed-large-entries',
  'e2e/feed-slow-consumer',
  'e2e/audit',
  'reliability/hostile-input',
  'reliability/tenancy-fuzz',
];

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...common, displayName: 'in process', testRegex: '(src|test)/.*\\.(spec|e2e-spec|contract-spec)\\.ts$' },
    // The HTTP suites again, against the built service with WORKERS=2 (test/support/stores.ts): what
    // two processes on one store could change (read-your-writes, races, the feed, leases, crashes,
    // signals, memory). Not the suites of what one worker does alone with a request, the same in
    // each (the edge's answers and headers, the docs, the browser's page), nor the CLI's own.
    {
      ...common,
      displayName: 'WORKERS=2',
      testRegex: 'test/(e2e|reliability)/.*\\.e2e-spec\\.ts$',
      testPathIgnorePatterns: [`/test/(${PER_REQUEST_SUITES.join('|')})\\.e2e-spec\\.ts$`],
      setupFiles: ['<rootDir>/test/support/workers-2.js'],
    },
  ],
  // Most suites wait on processes and sockets rather than compute: two at a time on 2 cores.
  maxWorkers: 2,
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/skipped-reporter.js', '<rootDir>/test/support/declared-statuses-reporter.js'],
  // No forceExit: every suite closes what it opens (apps in afterAll, child processes killed by
  // test/support), so Jest ends by itself, without forceExit's warning line in every run.
};
