// SPDX-License-Identifier: MIT
//
// The client under test for the client side of the official MCP conformance
// suite: mcplex, driven by an SDK client in front of it. The suite runs
//
//   node client-driver.mjs <server-url>
//
// with MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT (JSON, optional) and
// MCP_CONFORMANCE_PROTOCOL_VERSION. This starts build/mcplex serve (plain HTTP
// on 127.0.0.1:0, --port-file) with <server-url> as its only upstream and a
// bearer credential from the secret reference env:MX_CONF_UPSTREAM_TOKEN,
// connects an SDK client to mcplex's /mcp (the TypeScript SDK 1.32.2, or the
// SDK v2 client 2.4.0 pinned to 2026-07-28; see MX_CONF_FRONT),
// does what the scenario asks of a client (lists, calls, answers elicitations
// with the schema's defaults), checks the answers, stops mcplex by its PID and
// exits 0 when everything went through, 1 when something did not, 2 on a
// setup problem (no mcplex, it did not start).
//
// Environment set by run-client.sh:
//   MX_CONF_BUILD            directory holding the mcplex binary
//   MX_CONF_WORK             directory for this run's config and logs
//   MX_CONF_UPSTREAM_TOKEN   the upstream credential (a canary; never printed)
//   MX_CONF_DRIVER_MS        bound on the whole run (default 25000)
//   MX_CONF_FRONT            2025 or 2026: the SDK client in front of mcplex
//                            (default: the era of the revision under test)
//
// stdout gets one JSON summary (the suite keeps it as stdout.txt); stderr what
// went wrong and, on failure, the tail of mcplex's log.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const sdkDir = new URL('../js/node_modules/@modelcontextprotocol/', import.meta.url);
const EXIT_OK = 0;
const EXIT_FAIL = 1;
const EXIT_SETUP = 2;
const START_MS = 10000;
const MAX_PAGES = 20;

console.log = (...a) => console.error(...a);

const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const revision = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? '2025-11-25';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
// The client in front of mcplex: the era of the revision under test unless
// MX_CONF_FRONT says otherwise (a 2025 client through mcplex to a 2026
// upstream is a path of its own).
const front = process.env.MX_CONF_FRONT || (revision >= '2026-07-28' ? '2026' : '2025');
const modern = front === '2026';
const out = { scenario, revision, front: modern ? 'sdk-v2-2026-07-28' : 'sdk-1.32.2', steps: [] };
const problems = [];
let mcplex = null;
let logPath = null;

function fail(what) {
    problems.push(what);
    out.steps.push({ fail: what });
}

function expect(cond, what) {
    if (!cond)
        fail(what);
    return cond;
}

function text(r) {
    return r?.content?.find?.((c) => c.type === 'text')?.text ?? null;
}

// An elicitation answered as a user who accepts what is offered: each
// field's default, else a plain value of its type.
function defaults(schema) {
    const content = {};
    for (const [k, p] of Object.entries(schema?.properties ?? {})) {
        if (p.default !== undefined)
            content[k] = p.default;
        else if (Array.isArray(p.enum) && p.enum.length)
            content[k] = p.enum[0];
        else if (p.type === 'boolean')
            content[k] = true;
        else if (p.type === 'number' || p.type === 'integer')
            content[k] = 1;
        else if (p.type === 'string')
            content[k] = 'ok';
    }
    return content;
}

// Arguments for a tool the scenario gives none for: its required fields.
function argsFor(tool) {
    const a = {};
    const props = tool.inputSchema?.properties ?? {};
    for (const k of tool.inputSchema?.required ?? []) {
        const t = props[k]?.type;
        a[k] = t === 'number' || t === 'integer' ? 1 : t === 'boolean' ? true
            : t === 'object' ? {} : t === 'array' ? [] : 'x';
    }
    return a;
}

async function startMcplex() {
    const build = process.env.MX_CONF_BUILD;
    const bin = build ? join(build, 'mcplex') : '';
    if (!bin || !existsSync(bin))
        throw Object.assign(new Error(`no mcplex binary in MX_CONF_BUILD (${build ?? 'unset'})`),
            { setup: true });
    if (!process.env.MX_CONF_UPSTREAM_TOKEN)
        throw Object.assign(new Error('MX_CONF_UPSTREAM_TOKEN is not set'), { setup: true });
    const label = `${scenario.replace(/[^A-Za-z0-9_-]/g, '_')}-${revision}-${front}-${process.pid}`;
    const dir = join(process.env.MX_CONF_WORK ?? '.', label);
    mkdirSync(join(dir, 'state'), { recursive: true, mode: 0o700 });
    const url = process.argv[2];
    const cfg = join(dir, 'mcplex.toml');
    writeFileSync(cfg, [
        '[listen]', 'address = "127.0.0.1:0"', 'tls = false', '',
        '[proxy]', `state_dir = "${join(dir, 'state')}"`, `vault = "${join(dir, 'state', 'vault')}"`,
        'request_timeout = "20s"', 'log_level = "debug"', '',
        '[servers.upstream]', `url = "${url}"`, 'auth = "bearer"',
        'secret = "env:MX_CONF_UPSTREAM_TOKEN"', '',
    ].join('\n'));
    const portFile = join(dir, 'mcplex.port');
    logPath = join(dir, 'mcplex.log');
    const log = openSync(logPath, 'w');
    mcplex = spawn(bin, ['serve', '-c', cfg, '--port-file', portFile],
        { stdio: ['ignore', log, log] });
    out.mcplex_pid = mcplex.pid;
    const exited = new Promise((res) => mcplex.once('exit', (code, sig) => res({ code, sig })));
    mcplex.exitInfo = exited;
    const t0 = Date.now();
    while (Date.now() - t0 < START_MS) {
        if (existsSync(portFile)) {
            const port = readFileSync(portFile, 'utf8').trim();
            if (port)
                return `http://127.0.0.1:${port}/mcp`;
        }
        const r = await Promise.race([exited, new Promise((res) => setTimeout(() => res(null), 50))]);
        if (r)
            throw Object.assign(new Error(`mcplex exited at start (${r.code ?? r.sig})`), { setup: true });
    }
    throw Object.assign(new Error('mcplex did not write its port file'), { setup: true });
}

async function stopMcplex() {
    if (!mcplex || mcplex.exitCode !== null || mcplex.signalCode !== null)
        return mcplex ? { code: mcplex.exitCode, sig: mcplex.signalCode } : null;
    mcplex.kill('SIGTERM');
    const r = await Promise.race([mcplex.exitInfo,
        new Promise((res) => setTimeout(() => res(null), 5000))]);
    if (r)
        return r;
    mcplex.kill('SIGKILL');
    return { code: null, sig: 'SIGKILL', late: true };
}

// The SDK modules of the front's era; loaded while mcplex starts.
function loadSdk() {
    const load = (p) => import(new URL(p, sdkDir));
    if (!modern) {
        return Promise.all([load('sdk/dist/esm/client/index.js'),
            load('sdk/dist/esm/client/streamableHttp.js'), load('sdk/dist/esm/types.js')])
            .then(([a, b, c]) => ({ ...a, ...b, ...c }));
    }
    return load('client/dist/index.mjs');
}

// The SDK client of the front's era, behind one small interface.
async function connect(sdk, url, onElicit) {
    if (!modern) {
        const { Client, StreamableHTTPClientTransport, ElicitRequestSchema } = sdk;
        const client = new Client({ name: 'mcplex-conformance-driver', version: '1.0.0' },
            { capabilities: { elicitation: {} } });
        client.setRequestHandler(ElicitRequestSchema, (req) => onElicit(req.params));
        await client.connect(new StreamableHTTPClientTransport(new URL(url)));
        return client;
    }
    const { Client, StreamableHTTPClientTransport } = sdk;
    const client = new Client({ name: 'mcplex-conformance-driver', version: '1.0.0' },
        { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('elicitation/create', (req) => onElicit(req.params));
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return client;
}

async function listAll(client, method, key) {
    const items = [];
    let cursor;
    for (let page = 0; page < MAX_PAGES; page++) {
        const r = await client[method](cursor ? { cursor } : {});
        items.push(...(r[key] ?? []));
        cursor = r.nextCursor;
        if (!cursor)
            return items;
    }
    throw new Error(`${method}: more than ${MAX_PAGES} pages`);
}

async function call(client, name, args, want) {
    const step = { call: name };
    out.steps.push(step);
    try {
        const r = await client.callTool({ name, arguments: args });
        step.text = text(r);
        step.isError = r.isError ?? false;
        if (want !== undefined)
            expect(step.text === want || (want instanceof RegExp && want.test(step.text ?? '')),
                `${name}: answered ${JSON.stringify(step.text)}, expected ${want}`);
        return r;
    } catch (e) {
        step.error = { code: e?.code ?? null, message: String(e?.message ?? e) };
        fail(`${name}: ${step.error.message}`);
        return null;
    }
}

async function tools(client) {
    const list = await listAll(client, 'listTools', 'tools');
    out.steps.push({ tools: list.map((t) => t.name) });
    return list;
}

function need(list, name) {
    const t = list.find((x) => x.name === name);
    expect(t, `tools/list through mcplex lacks ${name}`);
    return t;
}

// What each scenario needs a client to do (the suite's mock server checks
// how mcplex did it upstream; the expected texts are the mock's answers).
const plans = {
    async initialize(c) {
        await tools(c);
    },
    async tools_call(c) {
        if (need(await tools(c), 'add_numbers'))
            await call(c, 'add_numbers', { a: 2, b: 3 }, 'The sum of 2 and 3 is 5');
    },
    async 'elicitation-sep1034-client-defaults'(c, st) {
        if (need(await tools(c), 'test_client_elicitation_defaults'))
            await call(c, 'test_client_elicitation_defaults', {}, /^Elicitation completed: /);
        expect(st.elicitations === 1, `${st.elicitations} elicitation requests reached the client`);
    },
    async 'sse-retry'(c) {
        if (need(await tools(c), 'test_reconnection'))
            await call(c, 'test_reconnection', {}, 'Reconnection test completed successfully');
    },
    async 'request-metadata'(c) {
        await tools(c);
    },
    async 'sep-2322-client-request-state'(c, st) {
        const list = await tools(c);
        // test_mrtr_unrelated goes out while test_mrtr_echo_state waits for
        // its answer (between its rounds): see onElicit
        st.between = () => call(c, 'test_mrtr_unrelated', {}, 'unrelated-ok');
        const want = { test_mrtr_echo_state: 'echo-state-ok', test_mrtr_no_state: 'no-state-ok',
            test_mrtr_no_result_type: 'no-result-type-test-ok' };
        for (const [name, t] of Object.entries(want)) {
            if (need(list, name))
                await call(c, name, {}, t);
        }
        expect(st.elicitations === 2, `${st.elicitations} elicitation requests, expected 2`);
        expect(st.betweenDone, 'test_mrtr_unrelated was not called between rounds');
    },
    async 'http-standard-headers'(c) {
        const list = await tools(c);
        for (const t of list)
            await call(c, t.name, argsFor(t), 'Headers test completed');
        const res = await listAll(c, 'listResources', 'resources');
        out.steps.push({ resources: res.map((r) => r.uri) });
        expect(res.length === 2, `${res.length} resources listed, expected 2`);
        for (const r of res) {
            const step = { read: r.uri };
            out.steps.push(step);
            try {
                step.contents = (await c.readResource({ uri: r.uri })).contents?.length ?? null;
            } catch (e) {
                fail(`resources/read ${r.uri}: ${e?.message ?? e}`);
            }
        }
        const prompts = await listAll(c, 'listPrompts', 'prompts');
        out.steps.push({ prompts: prompts.map((p) => p.name) });
        expect(prompts.length === 1, `${prompts.length} prompts listed, expected 1`);
        for (const p of prompts) {
            try {
                await c.getPrompt({ name: p.name });
            } catch (e) {
                fail(`prompts/get ${p.name}: ${e?.message ?? e}`);
            }
        }
    },
    async 'http-custom-headers'(c) {
        const list = await tools(c);
        for (const tc of context.toolCalls ?? []) {
            if (need(list, tc.name))
                await call(c, tc.name, tc.arguments ?? {}, 'Custom headers test completed');
        }
        expect((context.toolCalls ?? []).length > 0, 'the suite gave no toolCalls in its context');
    },
    async 'http-invalid-tool-headers'(c) {
        // a client calls what it is offered: mcplex must not offer the
        // tools whose x-mcp-header annotations are invalid
        const list = await tools(c);
        need(list, 'valid_tool');
        for (const t of list)
            await call(c, t.name, t.name === 'valid_tool' ? { region: 'us-west1' } : argsFor(t),
                'Tool call received');
    },
    async 'json-schema-ref-no-deref'(c) {
        const t = need(await tools(c), 'lookup_user');
        const ref = t?.inputSchema?.properties?.profile?.$ref;
        expect(typeof ref === 'string' && /^https?:\/\//.test(ref),
            `lookup_user's network $ref did not reach the client as it was: ${JSON.stringify(ref)}`);
    },
    async 'json-schema-2020-12-preservation'(c) {
        const list = await tools(c);
        const focal = need(list, 'json_schema_2020_12_tool');
        if (focal && need(list, 'json_schema_echo'))
            await call(c, 'json_schema_echo', { schema: focal.inputSchema }, 'echoed');
    },
};

async function main() {
    const plan = plans[scenario];
    if (!plan) {
        console.error(`client-driver: no plan for scenario '${scenario}'`);
        return EXIT_SETUP;
    }
    const sdk = loadSdk();
    sdk.catch(() => {});
    let url;
    try {
        url = await startMcplex();
    } catch (e) {
        console.error(`client-driver: ${e.message}`);
        return EXIT_SETUP;
    }
    const st = { elicitations: 0, between: null, betweenDone: false };
    const onElicit = async (params) => {
        st.elicitations++;
        out.steps.push({ elicitation: params?.message ?? null });
        if (st.between && !st.betweenDone) {
            st.betweenDone = true;
            await st.between();
        }
        return { action: 'accept', content: defaults(params?.requestedSchema) };
    };
    let client = null;
    try {
        client = await connect(await sdk, url, onElicit);
        out.server = client.getServerVersion?.() ?? null;
        await plan(client, st);
    } catch (e) {
        fail(`${e?.constructor?.name ?? 'error'}: ${e?.message ?? e}`);
    }
    try {
        await client?.close();
    } catch (e) {
        console.error(`client-driver: close: ${e?.message ?? e}`);
    }
    const stopped = await stopMcplex();
    out.mcplex_exit = stopped;
    expect(stopped && stopped.code === 0 && !stopped.late,
        `mcplex did not stop cleanly on SIGTERM: ${JSON.stringify(stopped)}`);
    return problems.length ? EXIT_FAIL : EXIT_OK;
}

const limit = Number(process.env.MX_CONF_DRIVER_MS ?? 25000);
const timer = setTimeout(() => {
    fail(`the driver did not finish within ${limit} ms`);
    if (mcplex && mcplex.exitCode === null)
        mcplex.kill('SIGKILL');
    report(EXIT_FAIL);
}, limit);

function report(code) {
    out.ok = code === EXIT_OK;
    process.stdout.write(`${JSON.stringify(out)}\n`);
    if (code !== EXIT_OK) {
        for (const p of problems)
            console.error(`client-driver: ${p}`);
        if (logPath && existsSync(logPath)) {
            const lines = readFileSync(logPath, 'utf8').trimEnd().split('\n');
            console.error(`client-driver: last lines of ${logPath}:\n${lines.slice(-30).join('\n')}`);
        }
    }
    process.exit(code);
}

main().then((code) => {
    clearTimeout(timer);
    report(code);
}, (e) => {
    clearTimeout(timer);
    fail(`crash: ${e?.stack ?? e}`);
    report(EXIT_FAIL);
});
