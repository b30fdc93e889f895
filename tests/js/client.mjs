// SPDX-License-Identifier: MIT
//
// Test driver around the official MCP TypeScript SDK client (Client +
// StreamableHTTPClientTransport, or StdioClientTransport), so integration
// tests talk to mcplex and to the fixtures the way a real client does.
//
//   node client.mjs <url> <scenario> [json-args]
//   MX_CLIENT_STDIO='["mcplex","stdio","-c","f.toml"]' node client.mjs stdio <scenario> [json-args]
//
// Scenarios and their json-args:
//   smoke     {"message": "hi"}                 initialize, tools/list, call echo
//   call      {"name": "add", "arguments": {}}  call one tool
//   progress  {"name": "slow", "arguments": {}} call with a progress handler;
//             every notification is reported with its receive time
//   list-all  {}                                tools, prompts, resources, templates
//   cancel    {"name", "arguments", "after_progress": 1, "settle_ms": 500}
//             call with a progress handler and abort it after that many
//             progress notifications (the SDK sends notifications/cancelled)
//   sampling  {"name", "arguments", "reply": "text"} declare the sampling
//             capability, answer every sampling/createMessage with |reply|,
//             call the tool; the requests received are reported
//   list-changed {"ready_file", "wait_ms": 20000, "kind": "tools",
//                 "go_file", "trigger": {"name", "arguments"}}
//             list, write |ready_file|, wait for |go_file| to exist (if
//             given), call the |trigger| tool (if given), wait for the
//             kind's list_changed (one sent after the first listing), list
//             again
//   same-ids  {"calls": [{"name","arguments"}, ...]} raw HTTP: one session per
//             call, all sending tools/call with id 1 and progress token "tok"
//             at once; each session's messages are reported
//   task      {"name", "arguments", "forged_id"}  MCP 2025-11-25 tasks: call
//             the tool as a task (callToolStream: created, statuses, result),
//             then tasks/get of its id, tasks/list, and tasks/get of
//             |forged_id|; then a second task, cancelled with tasks/cancel
//             once made; the task ids seen (notifications/tasks/status
//             among them) are reported
//   task-pause {"name", "arguments", "ready_file", "go_file", "wait_ms": 20000}
//             MCP 2025-11-25 tasks, a step at a time: call the tool as a task
//             (tools/call with params.task), tasks/get it ("before"), write
//             the task id to |ready_file|, wait for |go_file|, tasks/get it
//             again ("after"), then tasks/list
//   task-result {"id"}                         tasks/result of task |id|, then
//             tasks/get of it (each step's time is in "timings")
//   prompt    {"name", "arguments"}              prompts/get
//   read      {"uri"}                            resources/read
//   many      {"count": 50, "tool": "echo"} that many SDK clients at once: connect, list
//             tools, call echo with a message of their own, check it, close
//   two-calls {"name", "arguments", "ready_file", "go_file", "wait_ms": 20000}
//             call the tool, write |ready_file|, wait for |go_file| to exist,
//             call it again in the same session (first and second results)
// Any SDK scenario also takes "terminate": true (DELETE the session at the end).
//
// Environment:
//   MX_CLIENT_HEADERS     JSON object of extra request headers (e.g. Authorization)
//   MX_CLIENT_TIMEOUT_MS  bound on the whole run (default 30000)
//   MX_CLIENT_STDIO       JSON array: launch this command and speak MCP over its
//                         stdin/stdout (StdioClientTransport) instead of <url>; the
//                         SDK scenarios only. The result then has "stdio": its pid
//                         and how it exited after the client closed its stdin
//                         ("exit_after_eof_ms"; the SDK sends SIGTERM after 2 s).
//   MX_CLIENT_TRANSPORT   "sse": speak the HTTP+SSE transport of MCP 2024-11-05
//                         (SSEClientTransport: GET <url> for the stream, POST to
//                         the URL its endpoint event names) instead of
//                         Streamable HTTP; the SDK scenarios only
//   MX_CLIENT_STDIO_LOG   with MX_CLIENT_STDIO: path prefix; the command's raw
//                         stdout is appended to <prefix>.stdout, its stderr to
//                         <prefix>.stderr, and its pid written to <prefix>.pid
//
// Prints exactly one JSON object on stdout. Exit status: 0 when the scenario
// ran, whatever the server answered (errors are in the JSON, for the caller to
// assert on); 2 for bad usage; 3 when the overall timeout fired; 1 on a crash.
// Header values are never printed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    CallToolResultSchema,
    CreateMessageRequestSchema,
    CreateTaskResultSchema,
    PromptListChangedNotificationSchema,
    ResourceListChangedNotificationSchema,
    TaskStatusNotificationSchema,
    ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { appendFileSync, existsSync, openSync, writeFileSync } from 'node:fs';

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

// One raw Streamable HTTP POST; the answer's messages, JSON or SSE.
async function rawPost(url, headers, body) {
    const r = await fetch(url, {
        method: 'POST',
        headers: {
            ...headers,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(body),
    });
    const type = r.headers.get('content-type') ?? '';
    const msgs = [];
    const text = await r.text();
    if (type.startsWith('text/event-stream')) {
        for (const ev of text.split(/\r?\n\r?\n/)) {
            const data = ev.split(/\r?\n/).filter((l) => l.startsWith('data:'))
                .map((l) => l.slice(5).replace(/^ /, '')).join('\n');
            if (data)
                msgs.push(JSON.parse(data));
        }
    } else if (type.startsWith('application/json') && text) {
        msgs.push(JSON.parse(text));
    }
    return { status: r.status, sid: r.headers.get('mcp-session-id'), sse: type.startsWith('text/event-stream'), msgs };
}

// Sessions sending equal request ids and progress tokens at the same time.
async function sameIds(url, args) {
    const headers = parseJsonEnv('MX_CLIENT_HEADERS', {});
    const calls = args.calls ?? [];
    const sessions = await Promise.all(calls.map(async () => {
        const init = await rawPost(url, headers, {
            jsonrpc: '2.0', id: 1, method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {},
                      clientInfo: { name: 'same-ids', version: '0' } },
        });
        const h = { ...headers, 'mcp-session-id': init.sid, 'mcp-protocol-version': '2025-06-18' };
        await rawPost(url, h, { jsonrpc: '2.0', method: 'notifications/initialized' });
        return h;
    }));
    out.sessions = await Promise.all(calls.map(async (c, i) => {
        const r = await rawPost(url, sessions[i], {
            jsonrpc: '2.0', id: 1, method: 'tools/call',
            params: { name: c.name, arguments: c.arguments ?? {}, _meta: { progressToken: 'tok' } },
        });
        const final = r.msgs.find((m) => m.id !== undefined && (m.result || m.error));
        return {
            status: r.status,
            sse: r.sse,
            ids: r.msgs.filter((m) => m.id !== undefined).map((m) => m.id),
            progress: r.msgs.filter((m) => m.method === 'notifications/progress')
                .map((m) => m.params),
            text: final?.result?.content?.[0]?.text ?? null,
            error: final?.error ?? null,
        };
    }));
    await Promise.all(sessions.map((h) => fetch(url, { method: 'DELETE', headers: h })));
    out.ok = true;
}

// Many SDK clients at once, each checking that it got its own answer.
async function many(url, args, timeoutMs) {
    const headers = parseJsonEnv('MX_CLIENT_HEADERS', {});
    const count = args.count ?? 50;
    const failures = [];
    let ok = 0;
    await Promise.all(Array.from({ length: count }, async (_, i) => {
        const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
        const client = new Client({ name: `many-${i}`, version: '0.0.0' }, { capabilities: {} });
        const opts = { timeout: timeoutMs, maxTotalTimeout: timeoutMs };
        try {
            await client.connect(transport, opts);
            const tools = await client.listTools(undefined, opts);
            const tool = tools.tools.find((t) => t.name === (args.tool ?? 'echo'));
            if (!tool)
                throw new Error(`no ${args.tool ?? 'echo'} among ${tools.tools.length} tools`);
            const message = `client ${i}`;
            const r = await client.callTool({ name: tool.name, arguments: { message } },
                                            CallToolResultSchema, opts);
            if (r.content?.[0]?.text !== message)
                throw new Error(`client ${i} got ${JSON.stringify(r.content)}`);
            ok++;
            await transport.terminateSession();
        } catch (e) {
            failures.push({ i, error: describeError(e) });
        }
        try {
            await client.close();
        } catch {
            // recorded above
        }
    }));
    out.count = count;
    out.succeeded = ok;
    out.failures = failures.slice(0, 5);
    out.ok = true;
}

// The server as a command on stdio. The SDK reads its stdout; a second
// listener keeps the raw bytes, so the caller can check that nothing but
// JSON-RPC lines came out.
function stdioTransport(argv, info) {
    const prefix = process.env.MX_CLIENT_STDIO_LOG;
    const transport = new StdioClientTransport({
        command: argv[0],
        args: argv.slice(1),
        env: { ...process.env },
        stderr: prefix ? openSync(`${prefix}.stderr`, 'a') : 'inherit',
    });
    const start = transport.start.bind(transport);
    transport.start = async () => {
        await start();
        // The child is private to the SDK; the raw stream is only reachable there.
        const child = transport._process;
        info.pid = child.pid;
        child.once('exit', (code, signal) => {
            info.exit = { code, signal, t_ms: ms() };
        });
        if (prefix) {
            child.stdout.on('data', (chunk) => appendFileSync(`${prefix}.stdout`, chunk));
            writeFileSync(`${prefix}.pid`, `${child.pid}\n`);
        }
    };
    return transport;
}

async function waitFile(path, waitMs) {
    const until = performance.now() + waitMs;
    while (!existsSync(path)) {
        if (performance.now() > until)
            return false;
        await new Promise((r) => setTimeout(r, 50));
    }
    return true;
}

async function run(url, scenario, args, timeoutMs) {
    if (scenario === 'same-ids')
        return sameIds(url, args);
    if (scenario === 'many')
        return many(url, args, timeoutMs);
    const headers = parseJsonEnv('MX_CLIENT_HEADERS', {});
    const stdioArgv = parseJsonEnv('MX_CLIENT_STDIO', null);
    const stdio = stdioArgv ? {} : null;
    const legacy = process.env.MX_CLIENT_TRANSPORT === 'sse';
    const transport = stdioArgv ? stdioTransport(stdioArgv, stdio) : legacy ? new SSEClientTransport(new URL(url), {
        requestInit: { headers },
    }) : new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers },
        // One attempt: a test wants to see the failure, not the retries.
        reconnectionOptions: {
            initialReconnectionDelay: 1000,
            maxReconnectionDelay: 1000,
            reconnectionDelayGrowFactor: 1,
            maxRetries: 0,
        },
    });
    const capabilities = scenario === 'sampling' ? { sampling: {} } : {};
    const client = new Client({ name: 'mcplex-test-client', version: '0.0.0' }, { capabilities });
    const samplingRequests = [];
    if (scenario === 'sampling') {
        client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
            samplingRequests.push(req.params);
            return {
                role: 'assistant',
                content: { type: 'text', text: args.reply ?? 'sampled by the test client' },
                model: 'test-model',
                stopReason: 'endTurn',
            };
        });
    }
    const changes = { tools: 0, prompts: 0, resources: 0 };
    let changed = null;
    const changeSeen = new Promise((resolve) => { changed = resolve; });
    // list-changed waits for a change of what it listed: a notification
    // that came before (lists that arrived after initialize) is counted,
    // not awaited
    let armed = scenario !== 'list-changed';
    for (const [kind, schema] of [['tools', ToolListChangedNotificationSchema],
                                  ['prompts', PromptListChangedNotificationSchema],
                                  ['resources', ResourceListChangedNotificationSchema]]) {
        client.setNotificationHandler(schema, () => {
            changes[kind]++;
            if (armed && kind === (args.kind ?? 'tools'))
                changed();
        });
    }
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
    case 'cancel': {
        const progress = [];
        out.progress = progress;
        const ac = new AbortController();
        const after = args.after_progress ?? 1;
        const callStart = performance.now();
        try {
            out.result = await client.callTool(
                { name: args.name, arguments: args.arguments ?? {} }, CallToolResultSchema, {
                    ...reqOpts,
                    signal: ac.signal,
                    onprogress: (p) => {
                        progress.push(p);
                        if (progress.length === after)
                            ac.abort('cancelled by the test');
                    },
                });
            out.cancelled = false;
        } catch (e) {
            out.cancelled = ac.signal.aborted;
            out.result = { error: describeError(e) };
        }
        out.result_t_ms = round(performance.now() - callStart);
        // let the cancellation reach the upstream before the session ends
        await new Promise((r) => setTimeout(r, args.settle_ms ?? 500));
        out.progress_after_cancel = progress.length - Math.min(progress.length, after);
        break;
    }
    case 'two-calls': {
        const call = () => client.callTool({ name: args.name, arguments: args.arguments ?? {} },
                                           CallToolResultSchema, reqOpts);
        await step('first', call);
        if (args.ready_file)
            writeFileSync(args.ready_file, 'ready\n');
        if (args.go_file)
            out.go = await waitFile(args.go_file, args.wait_ms ?? 20000);
        out.session_id_kept = transport.sessionId;
        await step('second', call);
        out.session_id_same = transport.sessionId === out.session_id_kept;
        delete out.session_id_kept;
        break;
    }
    case 'task': {
        const seen = { created: null, statuses: [], result: null, error: null, notified: [] };
        client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
            seen.notified.push({ id: n.params.taskId, status: n.params.status });
        });
        const stream = client.experimental.tasks.callToolStream(
            { name: args.name, arguments: args.arguments ?? {} }, CallToolResultSchema,
            { ...reqOpts, task: { ttl: 60000 } });
        for await (const m of stream) {
            if (m.type === 'taskCreated')
                seen.created = m.task.taskId;
            else if (m.type === 'taskStatus')
                seen.statuses.push({ id: m.task.taskId, status: m.task.status });
            else if (m.type === 'result')
                seen.result = m.result;
            else if (m.type === 'error')
                seen.error = describeError(m.error);
        }
        out.task = seen;
        if (seen.created !== null) {
            await step('get', () => client.experimental.tasks.getTask(seen.created, reqOpts));
            await step('list', () => client.experimental.tasks.listTasks(undefined, reqOpts));
        }
        await step('forged', () =>
            client.experimental.tasks.getTask(args.forged_id ?? 'no-such-task', reqOpts));
        // a second task, cancelled once it is made
        const again = client.experimental.tasks.callToolStream(
            { name: args.name, arguments: args.arguments ?? {} }, CallToolResultSchema,
            { ...reqOpts, task: { ttl: 60000 } });
        for await (const m of again) {
            if (m.type === 'taskCreated') {
                out.cancel_id = m.task.taskId;
                break;
            }
        }
        if (out.cancel_id)
            await step('cancel', () => client.experimental.tasks.cancelTask(out.cancel_id, reqOpts));
        break;
    }
    case 'task-pause': {
        const created = await step('created', () => client.request(
            { method: 'tools/call',
              params: { name: args.name, arguments: args.arguments ?? {}, task: { ttl: 60000 } } },
            CreateTaskResultSchema, reqOpts));
        const id = created?.task?.taskId;
        if (!id)
            break;
        await step('before', () => client.experimental.tasks.getTask(id, reqOpts));
        writeFileSync(args.ready_file, id + '\n');
        out.go = await waitFile(args.go_file, args.wait_ms ?? 20000);
        await step('after', () => client.experimental.tasks.getTask(id, reqOpts));
        await step('list', () => client.experimental.tasks.listTasks(undefined, reqOpts));
        break;
    }
    case 'task-result': {
        await step('result', () =>
            client.experimental.tasks.getTaskResult(args.id, CallToolResultSchema, reqOpts));
        await step('get', () => client.experimental.tasks.getTask(args.id, reqOpts));
        break;
    }
    case 'prompt':
        await step('result', () =>
            client.getPrompt({ name: args.name, arguments: args.arguments ?? {} }, reqOpts));
        break;
    case 'read':
        await step('result', () => client.readResource({ uri: args.uri }, reqOpts));
        break;
    case 'sampling':
        await step('result', () =>
            client.callTool({ name: args.name, arguments: args.arguments ?? {} },
                            CallToolResultSchema, reqOpts));
        out.sampling_requests = samplingRequests;
        break;
    case 'list-changed': {
        const kind = args.kind ?? 'tools';
        const method = { tools: 'listTools', prompts: 'listPrompts', resources: 'listResources' }[kind];
        const key = kind;
        await step('before', () => listAll(client, method, key));
        armed = true;
        if (args.ready_file)
            writeFileSync(args.ready_file, 'ready\n');
        const waitStart = performance.now();
        const waitMs = args.wait_ms ?? 20000;
        if (args.go_file)
            out.go = await waitFile(args.go_file, waitMs);
        if (args.trigger)
            await step('trigger', () =>
                client.callTool({ name: args.trigger.name, arguments: args.trigger.arguments ?? {} },
                                CallToolResultSchema, reqOpts));
        out.notified = await Promise.race([
            changeSeen.then(() => true),
            new Promise((r) => setTimeout(() => r(false), waitMs)),
        ]);
        out.waited_ms = round(performance.now() - waitStart);
        await step('after', () => listAll(client, method, key));
        out.changes = changes;
        break;
    }
    default:
        throw new Error(`unreachable scenario ${scenario}`);
    }

    if (args.terminate)
        await step('terminate', async () => {
            await transport.terminateSession();
            return { done: true };
        });
    out.ok = true;
    // On stdio the SDK ends the command's stdin first, then waits up to 2 s
    // before it sends SIGTERM.
    const closeStart = ms();
    try {
        await client.close();
    } catch {
        // The result is already recorded; a failing close changes nothing.
    }
    if (stdio) {
        if (stdio.exit === undefined)
            await new Promise((r) => setTimeout(r, 100));
        out.stdio = {
            pid: stdio.pid ?? null,
            exit: stdio.exit ? { code: stdio.exit.code, signal: stdio.exit.signal } : null,
            exit_after_eof_ms: stdio.exit ? round(stdio.exit.t_ms - closeStart) : null,
        };
    }
}

const SCENARIOS = ['smoke', 'call', 'progress', 'list-all', 'cancel', 'sampling', 'list-changed',
                   'same-ids', 'many', 'prompt', 'read', 'two-calls', 'task', 'task-pause',
                   'task-result'];

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
    if (process.env.MX_CLIENT_STDIO && ['same-ids', 'many'].includes(scenario))
        return usage(`scenario ${scenario} speaks HTTP only, not MX_CLIENT_STDIO`);
    try {
        const argv = parseJsonEnv('MX_CLIENT_STDIO', null);
        if (argv !== null && (!Array.isArray(argv) || argv.length === 0 ||
                              !argv.every((a) => typeof a === 'string')))
            return usage('MX_CLIENT_STDIO must be a JSON array of strings');
    } catch (e) {
        return usage(`bad MX_CLIENT_STDIO: ${e.message}`);
    }
    if (['call', 'progress', 'cancel', 'sampling', 'prompt', 'two-calls'].includes(scenario) &&
        typeof args.name !== 'string')
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
