// SPDX-License-Identifier: MIT
// A stdio MCP server that speaks only the stateless revision 2026-07-28: the
// official TypeScript SDK v2 server (@modelcontextprotocol/server) served with
// serveStdio and `legacy: 'reject'`, so a 2025 `initialize` is refused and
// only server/discover and requests carrying the 2026-07-28 _meta envelope
// are answered.
//   node stdio26-server.mjs [NAME]
// Tools: echo {text} answers "<NAME> echo: <text>"; whoami answers what the
// request's _meta said (the protocol version and the client's name), so a
// test sees what reached the server.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

const name = process.argv[2] ?? 'stdio26';
console.log = (...a) => console.error(...a);

function make() {
    const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { tools: {} } });
    server.registerTool(
        'echo',
        { description: 'Echo the text back', inputSchema: z.object({ text: z.string() }) },
        async ({ text }) => ({ content: [{ type: 'text', text: `${name} echo: ${text}` }] }),
    );
    server.registerTool('whoami', { description: 'What the request said about its client' },
                        async (ctx) => {
                            const meta = ctx?.mcpReq?.envelope ?? {};
                            const said = {
                                protocolVersion: meta['io.modelcontextprotocol/protocolVersion'] ?? null,
                                client: meta['io.modelcontextprotocol/clientInfo']?.name ?? null,
                            };
                            return { content: [{ type: 'text', text: JSON.stringify(said) }] };
                        });
    return server;
}

serveStdio(() => make(), { legacy: 'reject', onerror: (e) => console.error(`${name}: ${e.message}`) });
