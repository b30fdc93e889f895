// SPDX-License-Identifier: MIT
//
// A load client on the official MCP TypeScript SDK, for gateways that only
// speak the legacy HTTP+SSE transport to clients (mcp-hub) and, for a like
// for like comparison, the Streamable HTTP ones. One client session, C
// workers each calling the tool in a loop until N calls are done or the
// time is up; prints one JSON object with calls, errors, calls/s and
// latency percentiles (nearest rank, microseconds, every call timed).
//   node mcpload.mjs URL sse|http TOOL CONCURRENCY SECONDS MAX_CALLS
// Extra request headers come from MX_LOAD_HEADERS (JSON object), never argv.
import { setMaxListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, kind, tool, concArg, secsArg, maxArg] = process.argv.slice(2);
const conc = Number(concArg);
const secs = Number(secsArg);
const maxCalls = Number(maxArg);
if (!url || !['sse', 'http'].includes(kind) || !tool || !(conc > 0) || !(secs > 0) || !(maxCalls > 0)) {
    process.stderr.write('usage: node mcpload.mjs URL sse|http TOOL CONCURRENCY SECONDS MAX_CALLS\n');
    process.exit(2);
}
// The SDK's transports add an abort listener per request to a long-lived
// signal; thousands of calls are this script's point, not a leak.
setMaxListeners(0);
const headers = process.env.MX_LOAD_HEADERS ? JSON.parse(process.env.MX_LOAD_HEADERS) : {};
const opts = { requestInit: { headers } };
const transport =
    kind === 'sse' ? new SSEClientTransport(new URL(url), opts) : new StreamableHTTPClientTransport(new URL(url), opts);
const client = new Client({ name: 'mcpload', version: '1' });
const watchdog = setTimeout(() => {
    process.stderr.write('mcpload: gave up after the time limit\n');
    process.exit(1);
}, (secs + 30) * 1000);
await client.connect(transport);

const lat = [];
let errors = 0;
let started = 0;
const deadline = performance.now() + secs * 1000;
async function worker() {
    while (started < maxCalls && performance.now() < deadline) {
        started++;
        const t0 = performance.now();
        try {
            const r = await client.callTool({ name: tool, arguments: { message: 'bench' } });
            if (r.isError || !Array.isArray(r.content)) errors++;
            else lat.push((performance.now() - t0) * 1000);
        } catch {
            errors++;
        }
    }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: conc }, worker));
const wall = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const pct = (p) => (lat.length ? Math.round(lat[Math.max(0, Math.ceil((p / 100) * lat.length) - 1)]) : null);
process.stdout.write(
    JSON.stringify({ calls: lat.length, errors, rps: lat.length / wall, p50_us: pct(50), p90_us: pct(90), p99_us: pct(99), max_us: pct(100) }) + '\n',
);
clearTimeout(watchdog);
await client.close();
process.exit(0);
