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
  // A failed test can leave a server open; end the run anyway rather than hang CI.
  forceExit: true,
};
