/**
 * The MCP server as a library: mount vaultplan's plan tools, resources and
 * prompt on a transport of your own (the one `vaultplan mcp` serves over
 * stdio and Streamable HTTP). Needs `@modelcontextprotocol/sdk`.
 *
 * @module vaultplan/mcp
 */
export { createMcpServer, type McpServerOptions } from './server.js'
