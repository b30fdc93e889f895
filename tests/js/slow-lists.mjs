// SPDX-License-Identifier: MIT
// A stdio MCP server (newline JSON-RPC) that answers initialize at once and
// tools/list only after the delay in ms given as its argument: an upstream
// whose catalogue is slow to come, for tests of what waits for it.
//   node slow-lists.mjs [DELAY_MS]
import readline from 'node:readline';

const delay = Number(process.argv[2] ?? 4000);
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');

readline.createInterface({ input: process.stdin }).on('line', (line) => {
    let m;
    try {
        m = JSON.parse(line);
    } catch {
        return;
    }
    if (m.id === undefined || typeof m.method !== 'string') return;
    if (m.method === 'initialize') {
        send({
            jsonrpc: '2.0',
            id: m.id,
            result: {
                protocolVersion: m.params?.protocolVersion ?? '2025-06-18',
                capabilities: { tools: {} },
                serverInfo: { name: 'slow-lists', version: '1' },
            },
        });
    } else if (m.method === 'tools/list') {
        const tools = [{ name: 'late', inputSchema: { type: 'object' } }];
        setTimeout(() => send({ jsonrpc: '2.0', id: m.id, result: { tools } }), delay);
    } else if (m.method === 'ping') {
        send({ jsonrpc: '2.0', id: m.id, result: {} });
    } else {
        send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
    }
});
