import { existsSync, rmSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';
import { startChildService } from '../support/child-service';
import { makeDataDir, startTestApp, TestApp, TOKENS } from '../support/test-app';

/**
 * The service as browsers meet it, at host names that are not localhost (browsers treat localhost
 * as secure, which hid a Content-Security-Policy that sent the /docs page's scripts to https on a
 * plain http port): every *.test name leads to 127.0.0.1. Needs Debian's Chromium
 * (`apt-get install -y chromium`); without it the tests are skipped, the title saying why.
 */
const CHROMIUM = '/usr/bin/chromium';
const HOST = 'docs.test';

const describeWithChromium = existsSync(CHROMIUM) ? describe : describe.skip;

describeWithChromium(`the service in headless Chromium at *.test host names (skipped without ${CHROMIUM}: apt-get install -y chromium)`, () => {
  let app: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    app = await startTestApp();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-proxy-server',
        '--host-resolver-rules=MAP *.test 127.0.0.1',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it(`renders /docs at http://${HOST} with every operation, nothing blocked or failed on the way`, async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      // helmet's Cross-Origin-Opener-Policy takes effect behind https only; on http Chromium says so, and that is all.
      if (message.type() === 'error' && !message.text().startsWith('The Cross-Origin-Opener-Policy header has been ignored')) {
        problems.push(`console: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => problems.push(`failed: ${request.url()} ${request.failure()?.errorText}`));
    const url = `http://${HOST}:${new URL(app.baseUrl).port}/docs`;

    await page.goto(url);
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    const operations = await page.$$eval('.opblock-summary', (blocks) =>
      blocks.map((block) => {
        const text = (selector: string) => block.querySelector(selector)?.textContent?.trim();
        return `${text('.opblock-summary-method')} ${text('.opblock-summary-path')}`;
      }),
    );
    expect(operations).toEqual(
      expect.arrayContaining([
        'POST /v1/profiles',
        'GET /v1/profiles',
        'GET /v1/profiles/{id}',
        'PUT /v1/profiles/{id}',
        'DELETE /v1/profiles/{id}',
        'GET /v1/profiles/{id}/history',
        'POST /v1/customers',
        'GET /v1/customers',
        'GET /v1/customers/{id}',
        'PUT /v1/customers/{id}',
        'DELETE /v1/customers/{id}',
        'GET /v1/customers/{id}/history',
        'GET /health/live',
        'GET /health/ready',
        'GET /metrics',
      ]),
    );
    expect(problems).toEqual([]);
    // Every script and style came from the page's own http origin.
    const loaded = await page.evaluate(() => performance.getEntriesByType('resource').map((r) => r.name));
    expect(loaded.filter((name) => !name.startsWith(`http://${HOST}:`))).toEqual([]);
    expect(loaded.some((name) => name.endsWith('/docs/swagger-ui-bundle.js'))).toBe(true);

    // Opened, an operation shows the document's realistic examples, not "string" placeholders.
    await page.click('#operations-customers-CustomersController_create .opblock-summary');
    const opened = page.locator('#operations-customers-CustomersController_create');
    await opened.locator('.body-param__example, .example').first().waitFor({ timeout: 30_000 });
    const text = await opened.innerText();
    expect(text).toContain('"email": "ada@example.com"');
    expect(text).toContain('"mobile": "09121234567"');
    expect(text).not.toMatch(/"(email|mobile)": "string"/);
  });

  it('lets "Try it out" create and update twice on each collection, the token given in the Authorize dialog', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`http://${HOST}:${new URL(app.baseUrl).port}/docs`);
      await page.waitForSelector('.opblock', { timeout: 30_000 });

      // The header is offered first, so that the token does not show in the request URL on screen.
      await page.click('.btn.authorize');
      const schemes = page.locator('.modal-ux .auth-container');
      await schemes.first().waitFor();
      expect(await schemes.first().innerText()).toMatch(/bearer/i);
      await schemes.first().locator('input').fill(TOKENS.a);
      await schemes.first().locator('button.authorize').click();
      await page.click('.modal-ux button.btn-done');

      /** Opens the operation, turns on "Try it out", fills in the id, and executes it twice: the two answers. */
      const tryTwice = async (operationId: string, urlPart: RegExp, id?: string) => {
        const operation = page.locator(`#operations-${operationId}`);
        await operation.locator('.opblock-summary').click();
        await operation.locator('.try-out__btn').click();
        if (id) await operation.locator('tr[data-param-name="id"] input').fill(id);
        const answers = [];
        for (let i = 0; i < 2; i++) {
          const [response] = await Promise.all([
            page.waitForResponse((r) => urlPart.test(r.url()) && r.request().method() !== 'OPTIONS'),
            operation.locator('button.execute, button.btn.execute').first().click(),
          ]);
          expect(response.request().url()).not.toContain('access_token');
          expect(response.request().headers()['authorization']).toBe(`Bearer ${TOKENS.a}`);
          answers.push({ status: response.status(), body: (await response.json()) as { data: Record<string, { id: string }> } });
        }
        await operation.locator('.opblock-summary').click();
        return answers;
      };

      for (const [collection, key] of [
        ['customers', 'Customer'],
        ['profiles', 'Profile'],
      ] as const) {
        const controller = `${collection}-${key}sController`;
        const created = await tryTwice(`${controller}_create`, new RegExp(`/v1/${collection}$`));
        expect(created.map((a) => a.status)).toEqual([201, 201]);
        // Two records: the example carries nothing that must be unique.
        expect(created[0].body.data[key].id).not.toBe(created[1].body.data[key].id);
        const id = created[0].body.data[key].id;
        const updated = await tryTwice(`${controller}_update`, new RegExp(`/v1/${collection}/${id}$`), id);
        expect(updated.map((a) => a.status)).toEqual([200, 200]);
      }
    } finally {
      await page.close();
    }
  });

  it("lets a page of an allowed origin call /v1 with its token in a header and read ETag and X-Total-Count; another origin's page cannot", async () => {
    // The client's page: any page of the other app (the one the first test used) will do, reached under
    // a host name of its own, so another origin. Served from loopback like the API (Chromium keeps
    // public pages from loopback addresses), its own Content-Security-Policy set aside so that only
    // CORS decides. The service under test takes a port of its own choosing and prints it.
    const pagePort = new URL(app.baseUrl).port;
    const dataDir = makeDataDir();
    const service = await startChildService(dataDir, { CORS_ORIGINS: `http://app.test:${pagePort}` });
    const api = `http://api.test:${new URL(service.url).port}`;
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const callFrom = async (origin: string) => {
      await page.goto(`${origin}:${pagePort}/health/live`);
      return page.evaluate(
        async ({ api, token }) => {
          const headers = { Authorization: `Bearer ${token}` };
          try {
            // JSON and Authorization make the browser send a preflight first, without the token.
            const created = await fetch(`${api}/v1/customers`, {
              method: 'POST',
              headers: { ...headers, 'Content-Type': 'application/json' },
              body: JSON.stringify({ email: 'browser@example.com' }),
            });
            const listed = await fetch(`${api}/v1/customers?email=browser@example.com`, { headers });
            return {
              created: created.status,
              etag: created.headers.get('ETag'),
              total: listed.headers.get('X-Total-Count'),
              listed: ((await listed.json()) as { data: unknown[] }).data.length,
            };
          } catch (error) {
            return { error: String(error) };
          }
        },
        { api, token: TOKENS.a },
      );
    };
    try {
      expect(await callFrom('http://app.test')).toEqual({ created: 201, etag: '"0"', total: '1', listed: 1 });
      expect(await callFrom('http://other.test')).toEqual({ error: 'TypeError: Failed to fetch' });
    } finally {
      await context.close();
      service.process.kill('SIGTERM');
      await service.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
