// SPDX-License-Identifier: MIT
//
// Test driver around the official MCP TypeScript SDK client (Client +
// StreamableHTTPClientTransport), so integration tests talk to mcplex and to
// the fixtures the way a real client does.
//
//   node client.mjs <url> <scenario> [json-args]
//
// Scenarios and their json-args:
//   smoke     {"message": "hi"}                 initialize, tools/list, call echo
//   call      {"name": "add", "arguments": {}}  call one tool
//   progress  {"name": "slow", "arguments": {}} call with a progress handler;
//             every notification is reported with its receive time
//   list-all  {}                                tools, prompts, resources, templates
// Any scenario also takes "terminate": true (DELETE the session at the end).
//
// Environment:
//   MX_CLIENT_HEADERS     JSON object of extra request headers (e.g. Authorization)
//   MX_CLIENT_TIMEOUT_MS  bound on the whole run (default 30000)
//
// Prints exactly one JSON object on stdout. Exit status: 0 when the scenario
// ran, whatever the server answered (errors are in the JSON, for the caller to
// assert on); 2 for bad usage; 3 when the overall timeout fired; 1 on a crash.
// Header values are never printed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const EXIT_OK = 0;
const EXIT_CRASH = 1;
const EXIT_USAGE = 2;
const EXIT_TIMEOUT = 3;
const MAX_PAGES = 100;

// stdout carries only the result object; anything the SDK logs goes to stderr.
console.log = (...a) => console.error(...a);
console.info = (...a) => console.error(...a);

const t0 = performance.now();
const round = (v) => Math.round(v * 1000) / 1000;
const ms = () => round(performance.now() - t0);
const out = { scenario: null, ok: false, timings: {} };
let finished = false;

function finish(code) {
    if (finished)
        return;
    finished = true;
    out.timings.total_ms = ms();
    process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(code));
}

function usage(msg) {
    out.error = { kind: 'usage', code: null, message: msg };
    finish(EXIT_USAGE);
}

function describeError(e) {
    const name = e?.constructor?.name ?? typeof e;
    const err = { kind: 'other', name, code: null, message: String(e?.message ?? e) };
    if (name === 'McpError') {
        err.kind = 'jsonrpc';
        err.code = e.code;
        if (e.data !== undefined)
            err.data = e.data;
    } else if (name === 'StreamableHTTPError') {
        err.kind = 'http';
        err.code = e.code;
    } else if (name === 'UnauthorizedError') {
        err.kind = 'http';
        err.code = 401;
    } else if (e?.code !== undefined) {
        err.code = e.code;
    }
    // fetch() hides the socket error (ECONNREFUSED, ECONNRESET) in its cause.
    if (e?.cause?.code !== undefined)
        err.cause = String(e.cause.code);
    return err;
}

function parseJsonEnv(name, fallback) {
    const raw = process.env[name];
    if (raw === undefined || raw === '')
        return fallback;
    return JSON.parse(raw);
}

async function listAll(client, method, key) {
    const names = [];
    const uris = [];
    let cursor;
    for (let page = 0; page < MAX_PAGES; page++) {
        const r = await client[method](cursor ? { cursor } : undefined);
        for (const item of r[key]) {
            names.push(item.name);
            if (item.uri !== undefined || item.uriTemplate !== undefined)
                uris.push(item.uri ?? item.uriTemplate);
        }
        cursor = r.nextCursor;
        if (!cursor)
            return uris.length ? { names, uris, pages: page + 1 } : { names, pages: page + 1 };
    }
    throw new Error(`${method}: more than ${MAX_PAGES} pages`);
}

async function step(name, fn) {
    const start = ms();
    try {
        out[name] = await fn();
    } catch (e) {
        out[name] = { error: describeError(e) };
    }
    out.timings[`${name}_ms`] = round(ms() - start);
    return out[name];
}

async function run(url, scenario, args, timeoutMs) {
    const headers = parseJsonEnv('MX_CLIENT_HEADERS', {});
    const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers },
        // One attempt: a test wants to see the failure, not the retries.
        reconnectionOptions: {
            initialReconnectionDelay: 1000,
            maxReconnectionDelay: 1000,
            reconnectionDelayGrowFactor: 1,
            maxRetries: 0,
        },
    });
    const client = new Client({ name: 'mcplex-test-client', version: '0.0.0' }, { capabilities: {} });
    const reqOpts = { timeout: timeoutMs, maxTotalTimeout: timeoutMs };

    const connectStart = ms();
    try {
        await client.connect(transport, reqOpts);
    } catch (e) {
        out.timings.connect_ms = round(ms() - connectStart);
        out.error = describeError(e);
        out.ok = false;
        return;
    }
    out.timings.connect_ms = round(ms() - connectStart);
    out.initialize = {
        protocol_version: transport.protocolVersion ?? null,
        server_info: client.getServerVersion() ?? null,
        capabilities: client.getServerCapabilities() ?? null,
        has_session_id: transport.sessionId !== undefined,
    };

    switch (scenario) {
    case 'smoke': {
        const message = args.message ?? 'hello from mcplex tests';
        await step('tools', async () => {
            const r = await listAll(client, 'listTools', 'tools');
            return r.names;
        });
        await step('echo', () =>
            client.callTool({ name: 'echo', arguments: { message } }, CallToolResultSchema, reqOpts));
        break;
    }
    case 'call':
        await step('result', () =>
            client.callTool({ name: args.name, arguments: args.arguments ?? {} },
                            CallToolResultSchema, reqOpts));
        break;
    case 'progress': {
        const progress = [];
        out.progress = progress;
        const callStart = performance.now();
        const rel = () => round(performance.now() - callStart);
        try {
            out.result = await client.callTool(
                { name: args.name, arguments: args.arguments ?? {} }, CallToolResultSchema, {
                    ...reqOpts,
                    onprogress: (p) => progress.push({ ...p, t_ms: rel() }),
                });
        } catch (e) {
            out.result = { error: describeError(e) };
        }
        out.result_t_ms = rel();
        break;
    }
    case 'list-all':
        await step('tools', () => listAll(client, 'listTools', 'tools'));
        await step('prompts', () => listAll(client, 'listPrompts', 'prompts'));
        await step('resources', () => listAll(client, 'listResources', 'resources'));
        await step('resource_templates',
                   () => listAll(client, 'listResourceTemplates', 'resourceTemplates'));
        break;
    default:
        throw new Error(`unreachable scenario ${scenario}`);
    }

    if (args.terminate)
        await step('terminate', async () => {
            await transport.terminateSession();
            return { done: true };
        });
    out.ok = true;
    try {
        await client.close();
    } catch {
        // The result is already recorded; a failing close changes nothing.
    }
}

const SCENARIOS = ['smoke', 'call', 'progress', 'list-all'];

function main() {
    const [url, scenario, rawArgs] = process.argv.slice(2);
    if (!url || !scenario)
        return usage(`usage: node client.mjs <url> <${SCENARIOS.join('|')}> [json-args]`);
    if (!SCENARIOS.includes(scenario))
        return usage(`unknown scenario "${scenario}"`);
    out.scenario = scenario;
    let args;
    let timeoutMs;
    try {
        args = rawArgs ? JSON.parse(rawArgs) : {};
        timeoutMs = Number(process.env.MX_CLIENT_TIMEOUT_MS || 30000);
        parseJsonEnv('MX_CLIENT_HEADERS', {});
    } catch (e) {
        return usage(`bad JSON argument: ${e.message}`);
    }
    if (args === null || typeof args !== 'object')
        return usage('json-args must be an object');
    if ((scenario === 'call' || scenario === 'progress') && typeof args.name !== 'string')
        return usage(`scenario ${scenario} needs {"name": "<tool>"}`);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
        return usage('MX_CLIENT_TIMEOUT_MS must be a positive number');

    setTimeout(() => {
        out.timed_out = true;
        out.error = { kind: 'timeout', code: null, message: `no result within ${timeoutMs} ms` };
        finish(EXIT_TIMEOUT);
    }, timeoutMs);
    run(url, scenario, args, timeoutMs).then(
        () => finish(EXIT_OK),
        (e) => {
            out.error = describeError(e);
            out.crashed = true;
            finish(EXIT_CRASH);
        });
}

main();
