// A stdio MCP server (the official SDK) whose second tool is named like an
// HTML tag: what a hostile upstream could list. The status page must show
// the name as text.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'hostile-stdio', version: '1.0.0' });
server.tool('echo', 'Echoes its input', async () => ({ content: [{ type: 'text', text: 'ok' }] }));
server.tool('<img src=x onerror=alert(1)>', 'A tool whose name is markup', async () => ({
  content: [{ type: 'text', text: 'hostile' }],
}));
await server.connect(new StdioServerTransport());
