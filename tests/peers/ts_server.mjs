#!/usr/bin/env node
// A small MCP server built with the official TypeScript SDK v2
// (`@modelcontextprotocol/server`, the 2026-07-28 revision; it still answers
// 2025-era `initialize` clients). mcpbox's integration tests run it as a real,
// independently written peer:
//
//     node tests/peers/ts_server.mjs              stdio (serveStdio)
//     node tests/peers/ts_server.mjs --http PORT  Streamable HTTP on 127.0.0.1:PORT at /mcp
//                                                 (createMcpHandler + toNodeHandler from
//                                                 `@modelcontextprotocol/node`)
//
// With port 0 the OS picks the port; either way the server prints
// "ts-peer listening on http://127.0.0.1:PORT/mcp" to stderr once it listens.
//
// Tools:
//   greet(name: string)       "Hello, NAME!"
//   add(a: number, b: number) text "SUM" and structuredContent {"sum": SUM}, declared by
//                             an outputSchema
//   fail(message: string)     a result with isError: true and the text MESSAGE
//   unlock()                  adds the tool `secret` (returns "the secret is 42") and
//                             tells listening clients that the tool list changed
//
// Resources: `ts://readme` (text "ts-peer readme"), `ts://logo` (a 4-byte PNG-typed
// blob: bytes 137 80 78 71), the template `ts://item/{id}` (text "item ID").
// Prompts: `greeting(name, [tone])` one user message "Say hello to NAME (TONE)"; the
// argument `name` completes to "Ada" and "Alan" from its prefix.
//
// The stateless 2026-07-28 HTTP entry builds a fresh server instance per request,
// so whether `secret` exists is process state that every instance reads.

import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, ResourceTemplate, completable, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

let unlocked = false;
/** Server instances that may hold a stdio connection; told about list changes. */
const live = new Set();
/** Set in HTTP mode: publishes list changes on open `subscriptions/listen` streams. */
let notifier;

function build() {
    const server = new McpServer(
        { name: 'ts-peer', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true } } }
    );
    server.registerTool(
        'greet',
        { description: 'Greets someone by name.', inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] })
    );
    server.registerTool(
        'add',
        {
            description: 'Adds two numbers.',
            inputSchema: z.object({ a: z.number(), b: z.number() }),
            outputSchema: z.object({ sum: z.number() })
        },
        async ({ a, b }) => ({
            content: [{ type: 'text', text: String(a + b) }],
            structuredContent: { sum: a + b }
        })
    );
    server.registerTool(
        'fail',
        { description: 'Always fails with the given message.', inputSchema: z.object({ message: z.string() }) },
        async ({ message }) => ({ content: [{ type: 'text', text: message }], isError: true })
    );
    server.registerTool('unlock', { description: 'Adds the tool `secret`.' }, async () => {
        const first = !unlocked;
        unlocked = true;
        if (first) {
            for (const other of live) if (other !== server) addSecret(other);
            addSecret(server);
            notifier?.toolsChanged();
        }
        return { content: [{ type: 'text', text: first ? 'unlocked' : 'already unlocked' }] };
    });
    server.registerResource('readme', 'ts://readme', { mimeType: 'text/plain', description: 'The peer\'s readme.' }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'ts-peer readme' }]
    }));
    server.registerResource('logo', 'ts://logo', { mimeType: 'image/png' }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'image/png', blob: Buffer.from([137, 80, 78, 71]).toString('base64') }]
    }));
    server.registerResource(
        'item',
        new ResourceTemplate('ts://item/{id}', { list: undefined }),
        { mimeType: 'text/plain', description: 'One item by id.' },
        async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }] })
    );
    server.registerPrompt(
        'greeting',
        {
            description: 'Asks for a greeting.',
            argsSchema: z.object({
                name: completable(z.string(), value => ['Ada', 'Alan'].filter(n => n.startsWith(value))),
                tone: z.string().optional()
            })
        },
        ({ name, tone }) => ({
            messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${name} (${tone ?? 'warm'})` } }]
        })
    );
    if (unlocked) addSecret(server);
    return server;
}

function addSecret(server) {
    if (server.secret) return;
    // On a connected instance this also sends notifications/tools/list_changed, which
    // serveStdio routes onto the client's open subscriptions/listen.
    server.secret = server.registerTool('secret', { description: 'Tells the secret.' }, async () => ({
        content: [{ type: 'text', text: 'the secret is 42' }]
    }));
}

function stdio() {
    serveStdio(() => {
        const server = build();
        live.add(server);
        return server;
    }, { onerror: error => console.error(`ts-peer: ${error.message}`) });
}

function http(port) {
    const handler = createMcpHandler(() => build(), {
        onerror: error => console.error(`ts-peer: ${error.message}`)
    });
    notifier = handler.notify;
    const node = toNodeHandler(handler);
    const server = createServer((req, res) => {
        if (new URL(req.url, 'http://x').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        node(req, res);
    });
    server.listen(port, '127.0.0.1', () => {
        console.error(`ts-peer listening on http://127.0.0.1:${server.address().port}/mcp`);
    });
}

const args = process.argv.slice(2);
if (args.length === 0) {
    stdio();
} else if (args.length === 2 && args[0] === '--http' && /^\d+$/.test(args[1])) {
    http(Number(args[1]));
} else {
    console.error('usage: ts_server.mjs [--http PORT]');
    process.exit(2);
}
