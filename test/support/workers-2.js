// The "WORKERS=2" project (jest.config.js): each test file of it runs its service as the built
// service with two workers. Jest gives every test file its own copy of process.env.
process.env.TEST_WORKERS = '2';
