import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, TestApp, TOKENS } from '../support/test-app';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
// Its command line, as a client author runs it (the package is ESM inside; Jest's CommonJS cannot load it).
const OPENAPI_TYPESCRIPT = join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');

/**
 * The OpenAPI document is usable by a real client: types generated from /docs-json with
 * openapi-typescript, a program using them through openapi-fetch (test/typed-client/drive.ts)
 * compiled with tsc --strict, then run against the service over a real socket.
 */
describe('a typed client generated from /docs-json', () => {
  let app: TestApp;
  let dir: string;
  beforeAll(async () => {
    app = await startTestApp();
    dir = mkdtempSync(join(tmpdir(), 'pcs-typed-client-'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('compiles against the generated types and drives every operation it uses', async () => {
    const document = (await app.http.get('/docs-json').expect(200)).text;
    writeFileSync(join(dir, 'openapi.json'), document);
    await run(process.execPath, [OPENAPI_TYPESCRIPT, 'openapi.json', '--output', 'schema.ts'], { cwd: dir });
    copyFileSync(join(ROOT, 'test', 'typed-client', 'drive.ts'), join(dir, 'drive.ts'));
    const compiled = await run(
      process.execPath,
      [TSC, '--strict', '--module', 'commonjs', '--target', 'ES2022', '--esModuleInterop', '--skipLibCheck', '--types', 'node', '--outDir', 'out', 'drive.ts'],
      { cwd: dir },
    ).catch((error) => error);
    expect(`${compiled.stdout}${compiled.stderr}`).toBe('');

    const { stdout } = await run(process.execPath, [join(dir, 'out', 'drive.js'), app.baseUrl, TOKENS.a]);
    const result = JSON.parse(stdout);
    const id = result.created.customer.id;
    expect(result).toEqual({
      created: {
        status: 201,
        etag: '"0"',
        customer: {
          id: expect.any(String),
          name: 'Ada Lovelace',
          email: 'ada@example.com',
          mobile: '09121234567',
          address: '',
          postal_code: '',
          company: 'Analytical Engines',
          tel: '2166554433',
          fax: '',
          registration_number: '',
          economical_number: '',
          created: expect.any(Number),
        },
      },
      listed: { page1: ['Charles Babbage'], page2: ['Ada Lovelace'], total: '2', byMobile: ['Charles Babbage'] },
      read: {
        etag: '"0"',
        customer: {
          id,
          name: 'Ada Lovelace',
          company: 'Analytical Engines',
          address: '',
          tel: '2166554433',
          email: 'ada@example.com',
          mobile: '09121234567',
          created: result.created.customer.created,
        },
      },
      updated: {
        status: 200,
        bodyStatus: 201,
        etag: '"1"',
        customer: expect.objectContaining({ id, company: 'Babbage & Co', tel: '' }),
      },
      stale: { status: 412, code: 'PRECONDITION_FAILED' },
      invalid: { status: 400, code: 'VALIDATION_FAILED', fields: ['email', 'mobile'] },
      deleted: { message: 'Customer deleted successfully.', id },
      gone: { status: 404, code: 'NOT_FOUND' },
      feed: {
        told: [
          {
            type: 'customer.created',
            revision: 0,
            changes: {
              name: { from: '', to: 'Ada Lovelace' },
              email: { from: '', to: 'ada@example.com' },
              mobile: { from: '', to: '09121234567' },
              company: { from: '', to: 'Analytical Engines' },
              tel: { from: '', to: '2166554433' },
            },
          },
          {
            type: 'customer.updated',
            revision: 1,
            changes: { company: { from: 'Analytical Engines', to: 'Babbage & Co' }, tel: { from: '2166554433', to: '' } },
          },
          { type: 'customer.deleted', revision: 2, changes: {} },
        ],
        // Four entries (two creates, an update, a delete) in pages of two: two full pages, then an empty one.
        pages: 3,
        cursorsDistinct: 2,
        badCursor: ['after'],
      },
    });
  });
});
