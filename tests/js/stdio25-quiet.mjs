// SPDX-License-Identifier: MIT
// A stdio MCP server of the 2025 era that leaves requests it does not know
// unanswered (some servers answer an unknown method with no error at all):
// the official TypeScript SDK 1.x McpServer over stdio whose fallback request
// handler never settles, so a server/discover (or any method it has no
// handler for) waits for ever while initialize, tools/list and tools/call are
// answered at once.
//   node stdio25-quiet.mjs [NAME]
// Tools: echo {text} answers "<NAME> echo: <text>".
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod/v4';

const name = process.argv[2] ?? 'stdio25';
console.log = (...a) => console.error(...a);

const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { tools: {} } });
server.registerTool(
    'echo',
    { description: 'Echo the text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: `${name} echo: ${text}` }] }),
);
server.server.fallbackRequestHandler = (request) => {
    console.error(`${name}: leaving ${request.method} unanswered`);
    return new Promise(() => {});
};
await server.connect(new StdioServerTransport());
