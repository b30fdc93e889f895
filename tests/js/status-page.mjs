// Drives mcplex's status page in Debian's chromium (puppeteer-core) and
// prints one JSON object of what it saw; the C test (it_status_page.c)
// judges it. Environment: MX_BASE (http://127.0.0.1:PORT), MX_LOGIN (a
// one-time login link), MX_TOKEN (the client token, for the SDK client and
// never for the browser), MX_SIM_URL and MX_SIM_TOKEN (the sim to pause),
// MX_SHOTS (a directory for screenshots; optional). Every wait is bounded.
import puppeteer from 'puppeteer-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = process.env;
const out = { consoleErrors: [], failedRequests: [], dialogs: [] };
const deadline = setTimeout(() => {
  out.error = 'timed out';
  console.log(JSON.stringify(out));
  process.exit(3);
}, 50000);

async function simControl(body) {
  const r = await fetch(env.MX_SIM_URL + '/__control', {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + env.MX_SIM_TOKEN, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return r.status;
}

async function rowState(page, server) {
  return page.$eval(`#upstreams tr[data-server="${server}"] td.state`, (td) => td.textContent)
    .catch(() => null);
}

const browser = await puppeteer.launch({
  executablePath: env.MX_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
});
let client;
try {
  // Without the cookie: refused.
  const anon = await browser.newPage();
  const r0 = await anon.goto(env.MX_BASE + '/status', { timeout: 10000 });
  out.withoutLogin = r0.status();
  await anon.close();

  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => out.consoleErrors.push(String(e)));
  page.on('requestfailed', (req) => {
    // the feed is cut when the browser closes; anything else counts
    if (!(req.url().endsWith('/status/events') && out.closing))
      out.failedRequests.push(req.url() + ' ' + (req.failure() || {}).errorText);
  });
  page.on('response', (res) => {
    if (res.status() >= 400) out.failedRequests.push(res.url() + ' ' + res.status());
  });
  page.on('dialog', async (d) => { out.dialogs.push(d.message()); await d.dismiss(); });

  const r1 = await page.goto(env.MX_LOGIN, { timeout: 10000 });
  out.afterLogin = r1.status();
  out.finalUrl = page.url();
  out.csp = r1.headers()['content-security-policy'] || null;
  await page.waitForFunction(() => document.getElementById('live').textContent === 'live',
    { timeout: 5000 });

  // An SDK client through the gateway: its lists bring the stdio server's
  // hostile tool name into the renamed map.
  client = new Client({ name: 'status-page-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(env.MX_BASE + '/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + env.MX_TOKEN } },
  }));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  out.tools = tools;

  await page.waitForFunction(() => document.querySelectorAll('#upstreams tbody tr').length >= 3,
    { timeout: 5000 });
  out.servers = await page.$$eval('#upstreams tbody tr', (rows) => rows.map((r) => r.dataset.server));

  // A call appears without a reload within 1 s of its answer.
  const echoName = tools.find((n) => n.endsWith('echo') && n.startsWith('alpha')) || 'echo';
  const t0 = Date.now();
  const res = await client.callTool({ name: echoName, arguments: { message: 'status page' } });
  out.callOk = !res.isError;
  const t1 = Date.now();
  await page.waitForFunction((name) => [...document.querySelectorAll('#calls tbody tr')]
    .some((tr) => tr.children[4].textContent === name && tr.children[3].textContent === 'alpha'),
  { timeout: 1000 }, echoName).then(() => { out.callShownMs = Date.now() - t1; },
    () => { out.callShownMs = null; });
  out.callTookMs = t1 - t0;

  // The hostile name shows as its characters; no element came of it.
  await page.waitForFunction(() => [...document.querySelectorAll('#renamed tbody td')]
    .some((td) => td.textContent.includes('onerror')), { timeout: 5000 }).catch(() => null);
  out.renamedOriginals = await page.$$eval('#renamed tbody tr td:last-child',
    (tds) => tds.map((td) => td.textContent));
  out.imgCount = await page.$$eval('img', (l) => l.length);
  await client.callTool({ name: tools.find((n) => n.includes('img')) || 'none', arguments: {} })
    .catch(() => null);

  // Pause alpha: its row turns "waking", then "up" again.
  out.pauseStatus = await simControl({ action: ['pause'] });
  const woke = client.callTool({ name: echoName, arguments: { message: 'wake me' } });
  out.sawWaking = await page.waitForFunction(() => {
    const td = document.querySelector('#upstreams tr[data-server="alpha"] td.state');
    return td && td.textContent === 'waking';
  }, { timeout: 8000 }).then(() => true, () => false);
  await woke.catch(() => null);
  out.sawUpAgain = await page.waitForFunction(() => {
    const td = document.querySelector('#upstreams tr[data-server="alpha"] td.state');
    return td && td.textContent === 'up';
  }, { timeout: 8000 }).then(() => true, () => false);
  out.alphaState = await rowState(page, 'alpha');
  out.wakeCell = await page.$eval('#upstreams tr[data-server="alpha"]',
    (tr) => tr.children[12].textContent);

  if (env.MX_SHOTS) {
    await page.setViewport({ width: 1500, height: 900 });
    await page.screenshot({ path: env.MX_SHOTS + '/status-page.png', fullPage: true });
    if (env.MX_REPORT) {
      const rp = await browser.newPage();
      await rp.setViewport({ width: 1100, height: 900 });
      await rp.goto('file://' + env.MX_REPORT);
      await rp.screenshot({ path: env.MX_SHOTS + '/bench-report.png', fullPage: true });
      await rp.close();
    }
  }
  out.closing = true;
} catch (e) {
  out.error = String(e && e.stack || e);
} finally {
  if (client) await client.close().catch(() => null);
  out.closing = true;
  await browser.close();
}
clearTimeout(deadline);
console.log(JSON.stringify(out));
