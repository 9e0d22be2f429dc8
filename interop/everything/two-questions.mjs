// A 2025-11-25 server on the official TypeScript MCP SDK 1.x (the one the everything server
// runs on), for the CLI's tests of answering several questions: its one tool, plan_trip,
// asks two questions in a row, after asking for the client's roots when the client has
// some. Its question keys, as a 2025 client sees them, are its request ids: 0 and 1, or 1
// and 2 when it asked for the roots first.
//
//   node two-questions.mjs        (stdio; installed next to the everything server by
//                                   scripts/everything-env.sh)
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server(
  { name: "two-questions", version: "1.0.0" },
  { capabilities: { tools: {} } },
);

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "plan_trip",
      description: "Asks where to, then for how many nights.",
      inputSchema: { type: "object", properties: {} },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name !== "plan_trip") {
    throw new Error(`no tool ${request.params.name}`);
  }
  if (server.getClientCapabilities()?.roots) {
    await server.listRoots();
  }
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  const where = await server.elicitInput({
    message: "Where to?",
    requestedSchema: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    },
  });
  if (where.action !== "accept") {
    return text(`No trip (${where.action}).`);
  }
  const nights = await server.elicitInput({
    message: "How many nights?",
    requestedSchema: {
      type: "object",
      properties: { nights: { type: "integer", minimum: 1 } },
      required: ["nights"],
    },
  });
  if (nights.action !== "accept") {
    return text(`No trip to ${where.content.city} (${nights.action}).`);
  }
  return text(`${nights.content.nights} nights in ${where.content.city}.`);
});

await server.connect(new StdioServerTransport());
