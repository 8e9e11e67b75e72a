/** @type {import('jest').Config} */
module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  testRegex: '(src|test)/.*\\.(spec|e2e-spec|contract-spec)\\.ts$',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    '^.+\\.js$': '<rootDir>/test/support/esm-to-cjs.js',
  },
  transformIgnorePatterns: ['/node_modules/(?!@nestjs/)'],
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/skipped-reporter.js'],
  // No forceExit: every suite closes what it opens (apps in afterAll, child processes killed by
  // test/support), so Jest ends by itself, without forceExit's warning line in every run.
};
