// SPDX-License-Identifier: MIT
//
// The official TypeScript SDK v2 client (@modelcontextprotocol/client),
// pinned to the stateless revision 2026-07-28, against an MCP server:
//
//   node client26.mjs <url> <json-args>
//   MX_CLIENT_STDIO='["mcplex","stdio","-c","f.toml"]' node client26.mjs stdio <json-args>
//                 (launch that command and speak over its stdin/stdout)
//
// json-args: {"calls": [{"name", "arguments"}],   tools to call, texts reported
//             "progress": {"name", "arguments"},  a call with a progress handler
//             "sampling": {"name", "arguments", "reply"}  a call during which the
//                         server asks for sampling (answered with |reply|)
//             "listen": {"name", "arguments", "wait_ms"}  list resources, open
//                         subscriptions/listen for resource list changes, call the
//                         tool, wait for the notification, list resources again}
//
// Prints one JSON object on stdout: what the server answered and what went
// over the wire (methods and protocol version headers of every POST, never
// header values that could be secrets). Exit status: 0 when the run ended
// (errors are in the JSON); 2 for bad usage; 3 on the overall timeout; 1 on a
// crash.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const MAX_PAGES = 100;
console.log = (...a) => console.error(...a);

const out = { ok: false, wire: [] };

function done(code) {
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(code);
}

async function listAll(client, method, key) {
    const items = [];
    let cursor;
    for (let page = 0; page < MAX_PAGES; page++) {
        const r = await client[method](cursor ? { cursor } : {});
        items.push(...r[key]);
        cursor = r.nextCursor;
        if (!cursor)
            break;
    }
    return items;
}

function text(result) {
    return result?.content?.[0]?.text ?? null;
}

async function run(url, args) {
    // every POST's method and version, to show what the client really spoke
    const recordingFetch = async (input, init) => {
        const h = new Headers(init?.headers ?? {});
        let method = null;
        try {
            method = JSON.parse(init?.body ?? 'null')?.method ?? null;
        } catch {
            method = null;
        }
        out.wire.push({
            http: init?.method ?? 'GET',
            method,
            version: h.get('mcp-protocol-version'),
            mcp_method: h.get('mcp-method'),
            session: h.has('mcp-session-id'),
        });
        return fetch(input, init);
    };
    const samplingRequests = [];
    const client = new Client(
        { name: 'mcplex-test-2026', version: '1.0.0' },
        {
            capabilities: { sampling: {} },
            versionNegotiation: { mode: { pin: '2026-07-28' } },
        },
    );
    client.setRequestHandler('sampling/createMessage', async (request) => {
        samplingRequests.push(request.params);
        return {
            model: 'test-model',
            role: 'assistant',
            content: { type: 'text', text: args.sampling?.reply ?? 'reply' },
        };
    });
    let changes = 0;
    let changed;
    const changeSeen = new Promise((resolve) => { changed = resolve; });
    client.setNotificationHandler('notifications/resources/list_changed', () => {
        changes++;
        changed();
    });
    // <url> "stdio": launch MX_CLIENT_STDIO (a JSON array) and speak over its
    // stdin/stdout; the wire record stays empty (no HTTP)
    const transport = url === 'stdio'
        ? new StdioClientTransport({
            command: JSON.parse(process.env.MX_CLIENT_STDIO)[0],
            args: JSON.parse(process.env.MX_CLIENT_STDIO).slice(1),
            env: { ...process.env },
            stderr: 'inherit',
        })
        : new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
    await client.connect(transport);
    out.protocol_version = client.getNegotiatedProtocolVersion() ?? null;
    out.server = client.getServerVersion() ?? null;
    out.capabilities = client.getServerCapabilities() ?? null;

    out.tools = (await listAll(client, 'listTools', 'tools')).map((t) => t.name);
    out.calls = [];
    for (const c of args.calls ?? [])
        out.calls.push(text(await client.callTool({ name: c.name, arguments: c.arguments ?? {} })));

    if (args.progress) {
        const progress = [];
        const r = await client.callTool(
            { name: args.progress.name, arguments: args.progress.arguments ?? {} },
            { onprogress: (p) => progress.push(p) },
        );
        out.progress = progress;
        out.progress_result = text(r);
    }
    if (args.sampling) {
        const r = await client.callTool({
            name: args.sampling.name, arguments: args.sampling.arguments ?? {},
        });
        out.sampling_result = text(r);
        out.sampling_requests = samplingRequests;
    }
    if (args.listen) {
        out.resources_before = (await listAll(client, 'listResources', 'resources'))
            .map((x) => x.uri);
        const sub = await client.listen({ resourcesListChanged: true });
        out.listen_honored = sub.honoredFilter;
        const before = changes;
        const r = await client.callTool({
            name: args.listen.name, arguments: args.listen.arguments ?? {},
        });
        out.listen_call = text(r) ?? r?.content?.[0]?.uri ?? null;
        out.notified = before < changes || await Promise.race([
            changeSeen.then(() => true),
            new Promise((res) => setTimeout(() => res(false), args.listen.wait_ms ?? 15000)),
        ]);
        out.resources_after = (await listAll(client, 'listResources', 'resources'))
            .map((x) => x.uri);
        await sub.close();
        out.listen_closed = await sub.closed;
    }
    await client.close();
    out.ok = true;
}

const [url, rawArgs] = process.argv.slice(2);
if (!url) {
    console.error('usage: node client26.mjs <url> [json-args]');
    process.exit(2);
}
let args = {};
try {
    args = rawArgs ? JSON.parse(rawArgs) : {};
} catch (e) {
    console.error(`bad json-args: ${e.message}`);
    process.exit(2);
}
const timer = setTimeout(() => {
    out.error = 'overall timeout';
    done(3);
}, Number(process.env.MX_CLIENT_TIMEOUT_MS ?? 45000));
run(url, args).then(
    () => { clearTimeout(timer); done(0); },
    (e) => {
        clearTimeout(timer);
        out.error = String(e?.message ?? e);
        out.error_code = e?.code ?? null;
        done(0);
    },
);
