/** @type {import('jest').Config} */
module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  testRegex: '(src|test)/.*\\.(spec|e2e-spec|contract-spec)\\.ts$',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/skipped-reporter.js'],
  // A failed test can leave a server open; end the run anyway rather than hang CI.
  forceExit: true,
};
