import { existsSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * /docs in a real browser, at a host name that is not localhost (browsers treat localhost as secure,
 * which hid a Content-Security-Policy that sent the page's scripts to https on a plain http port).
 * Needs Debian's Chromium (`apt-get install -y chromium`); without it the test is skipped, its title saying why.
 */
const CHROMIUM = '/usr/bin/chromium';
const HOST = 'docs.test';

const describeWithChromium = existsSync(CHROMIUM) ? describe : describe.skip;

describeWithChromium(`/docs in headless Chromium at http://${HOST} (skipped without ${CHROMIUM}: apt-get install -y chromium)`, () => {
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
        `--host-resolver-rules=MAP ${HOST} 127.0.0.1`,
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('renders every operation, with nothing blocked or failed on the way', async () => {
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
});
