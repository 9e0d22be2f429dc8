// The TypeScript peer of the benchmark: the official TypeScript MCP SDK, v2 server packages
// (@modelcontextprotocol/server 2.4.0, @modelcontextprotocol/node 2.1.2), protocol revision
// 2026-07-28. bench/typescript/env.sh installs the pinned packages into a cache outside the
// checkout and copies this file next to them.
//
// The benchmark contract, as every peer serves it:
//
// * `echo {text}` answers one text block equal to `text`;
// * `confirm {text}` answers, in round 1, `input_required` with one form elicitation under the
//   key `confirm` (schema `{ok: boolean}`) and a sealed `requestState`; the retry with the
//   accepted answer and the echoed state answers `text`. The state is minted by the SDK's
//   `createRequestStateCodec` (HMAC-SHA256, a fresh random key per process, a 300 s TTL, bound
//   to the method) and carries the tool and its argument, which round 2 checks; the SDK's
//   `requestState.verify` hook rejects anything else with -32602 before the handler runs;
// * `--many` registers `echo` and 99 generated tools with three arguments each instead;
// * `--listen` registers `echo` and `publish {uri}` (announces `notifications/resources/updated`
//   for `uri`, through the handler's `notify.resourceUpdated`, to every open
//   `subscriptions/listen` stream that subscribed to it) and advertises `resources.subscribe`,
//   for the open-streams scenario.
//
// Configuration (the fastest fair one the SDK offers over HTTP): `createMcpHandler`, the SDK's
// own 2026-07-28 entry (a fresh `McpServer` from the factory per request, which is how the SDK
// serves stateless HTTP), `legacy: 'reject'` (modern only, like the other peers' servers),
// `responseMode: 'json'` (plain JSON replies; the contract's tools send no mid-call
// notifications), mounted on plain `node:http` with the SDK's `toNodeHandler`, `TCP_NODELAY`
// on every socket. The body is read and parsed once here and handed over as `parsedBody`,
// the SDK's documented input for a body already parsed (what `express.json()` users pass):
// the entry then classifies the request from the value instead of cloning and re-reading a
// web `Request` (about 30 % less server CPU per call in alternating runs). The tools' zod
// schemas, the elicitation schema and the codec are built once per process, not per
// request. `maxSubscriptions` is raised from its default (1024) for the open-streams
// scenario.
//
// Usage: node server.mjs [--many | --listen] (--port N | --stdio)

import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

import { toNodeHandler } from '@modelcontextprotocol/node';
import {
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    McpServer,
    createMcpHandler,
    createRequestStateCodec,
    inputRequired,
    inputResponse
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const EXTRA_TOOLS = 99;
/** Open `subscriptions/listen` streams the HTTP handler accepts (the open-streams scenario opens 10,000). */
const MAX_SUBSCRIPTIONS = 100_000;

const { values: cli } = parseArgs({
    options: {
        port: { type: 'string' },
        stdio: { type: 'boolean', default: false },
        many: { type: 'boolean', default: false },
        listen: { type: 'boolean', default: false }
    }
});

const info = { name: 'typescript-bench', version: '0.1.0' };
const textArgs = z.object({ text: z.string().describe('Any text.') });
const confirmSchema = {
    type: 'object',
    properties: { ok: { type: 'boolean', description: 'Go ahead?' } },
    required: ['ok']
};
// A fresh random key per process, like the other servers' defaults.
const codec = createRequestStateCodec({
    key: randomBytes(32),
    ttlSeconds: 300,
    bind: ctx => ctx.mcpReq.method
});
const manyArgs = Array.from({ length: EXTRA_TOOLS }, (_, i) => {
    const n = String(i + 1).padStart(3, '0');
    return {
        n,
        schema: z.object({
            [`label_${n}`]: z.string().describe(`A label for call ${i + 1}.`),
            [`count_${n}`]: z.number().int().describe(`A count for call ${i + 1}.`),
            [`enabled_${n}`]: z.boolean().describe(`A switch for call ${i + 1}.`)
        })
    };
});
const publishArgs = z.object({ uri: z.string().describe('The resource that changed.') });

const text = value => ({ content: [{ type: 'text', text: value }] });

/** Set once the HTTP handler exists: what `publish` announces changes through over HTTP. */
let notify;

function build() {
    const server = new McpServer(info, {
        capabilities: cli.listen ? { resources: { subscribe: true } } : undefined,
        requestState: { verify: codec.verify }
    });
    server.registerTool('echo', { description: 'Returns its text.', inputSchema: textArgs }, async ({ text: t }) => text(t));
    if (cli.many) {
        for (const { n, schema } of manyArgs) {
            server.registerTool(
                `tool_${n}`,
                { description: `Generated tool ${Number(n)} of ${EXTRA_TOOLS}: formats its three arguments.`, inputSchema: schema },
                async a => text(`tool_${n}: ${a[`label_${n}`]} ${a[`count_${n}`]} ${a[`enabled_${n}`]}`)
            );
        }
    } else if (cli.listen) {
        server.registerTool(
            'publish',
            { description: 'Announces that a resource changed to every listen stream subscribed to it.', inputSchema: publishArgs },
            async ({ uri }) => {
                if (notify !== undefined) {
                    // HTTP: the handler's bus reaches every open listen stream.
                    notify.resourceUpdated(uri);
                } else {
                    // stdio: the connection's own instance, whose listen router stamps it.
                    await server.server.sendResourceUpdated({ uri });
                }
                return text('published');
            }
        );
    } else {
        server.registerTool(
            'confirm',
            { description: 'Returns its text after the user confirms.', inputSchema: textArgs },
            async ({ text: t }, ctx) => {
                // Verified by the codec before this body runs; undefined in round 1.
                const state = ctx.mcpReq.requestState();
                if (state === undefined) {
                    const requestState = await codec.mint({ tool: 'confirm', text: t }, ctx);
                    return inputRequired({
                        inputRequests: { confirm: inputRequired.elicit({ message: 'Confirm?', requestedSchema: confirmSchema }) },
                        requestState
                    });
                }
                if (state.tool !== 'confirm' || state.text !== t) {
                    throw new Error('requestState was minted for another call');
                }
                const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
                const ok = answer.kind === 'elicit' && answer.action === 'accept' && answer.content?.ok === true;
                return text(ok ? t : 'Not confirmed.');
            }
        );
    }
    return server;
}

if (cli.stdio || cli.port === undefined) {
    serveStdio(build, { legacy: 'reject', maxSubscriptions: MAX_SUBSCRIPTIONS });
} else {
    const handler = createMcpHandler(build, {
        legacy: 'reject',
        responseMode: 'json',
        maxSubscriptions: MAX_SUBSCRIPTIONS
    });
    notify = handler.notify;
    const listener = toNodeHandler(handler);
    const http = createServer((req, res) => {
        if (req.method !== 'POST') {
            listener(req, res);
            return;
        }
        readJson(req, res, parsed => listener(req, res, parsed));
    });
    http.on('connection', socket => socket.setNoDelay(true));
    // Idle keep-alive connections and long-lived listen streams stay open as long as the
    // load generator keeps them.
    http.keepAliveTimeout = 0;
    http.requestTimeout = 0;
    http.headersTimeout = 0;
    http.listen(Number(cli.port), '127.0.0.1');
}

/** Reads a POST body of at most the SDK's default limit and hands its JSON to `then`; answers
 * 413 or a JSON-RPC parse error itself otherwise. */
function readJson(req, res, then) {
    const chunks = [];
    let size = 0;
    let refused = false;
    req.on('data', chunk => {
        size += chunk.length;
        if (size > DEFAULT_MAX_REQUEST_BODY_SIZE && !refused) {
            refused = true;
            res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
            res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Payload Too Large' } }));
            req.destroy();
        }
        if (!refused) chunks.push(chunk);
    });
    req.on('end', () => {
        if (refused) return;
        let parsed;
        try {
            parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
            res.writeHead(400, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
            return;
        }
        then(parsed);
    });
}
