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
//   touch(uri: string)        tells clients subscribed to URI that it changed
//                             (`notifications/resources/updated`), and every listening
//                             client that the resource and prompt lists changed
//   log()                     logs "an info line" (info) and "a debug line" (debug) with
//                             the request's log level (2026-07-28: none without one)
//   wait(ms: number)          answers "waited" after MS milliseconds, unless the request
//                             is cancelled first (its abort signal: `notifications/cancelled`,
//                             or over 2026-07-28 HTTP its response stream closed)
//   waits()                   {"started": N, "cancelled": M} as text: the waits begun and
//                             the waits cancelled so far
//   capabilities()            the client capabilities this request came with, as JSON
//                             text: a 2026-07-28 request's `_meta` ones, else those
//                             the session's `initialize` declared
//
// Resources: `ts://readme` (text "ts-peer readme"), `ts://logo` (a 4-byte PNG-typed
// blob: bytes 137 80 78 71), the template `ts://item/{id}` (text "item ID").
// Prompts: `greeting(name, [tone])` one user message "Say hello to NAME (TONE)"; the
// argument `name` completes to "Ada" and "Alan" from its prefix.
// Capabilities: resources with `subscribe` and `listChanged`, prompts with
// `listChanged`, logging. `resources/subscribe` and `resources/unsubscribe` (2025
// clients) are answered and remembered; 2026-07-28 clients name URIs in their
// `subscriptions/listen` filter, which the SDK applies.
//
// The stateless 2026-07-28 HTTP entry builds a fresh server instance per request,
// so whether `secret` exists is process state that every instance reads.

import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, ResourceTemplate, completable, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

let unlocked = false;
/** Waits begun and waits cancelled so far, by any instance. */
let started = 0;
let cancelled = 0;
/** URIs a 2025-era client subscribed to with `resources/subscribe`. */
const subscribed = new Set();
/** Server instances that may hold a stdio connection; told about list changes. */
const live = new Set();
/** Set in HTTP mode: publishes list changes on open `subscriptions/listen` streams. */
let notifier;

function build() {
    const server = new McpServer(
        { name: 'ts-peer', version: '1.0.0' },
        {
            capabilities: {
                tools: { listChanged: true },
                resources: { subscribe: true, listChanged: true },
                prompts: { listChanged: true },
                logging: {}
            }
        }
    );
    // 2025-era clients: remembered per process (one client at a time in the tests).
    server.server.setRequestHandler('resources/subscribe', async request => {
        subscribed.add(request.params.uri);
        return {};
    });
    server.server.setRequestHandler('resources/unsubscribe', async request => {
        subscribed.delete(request.params.uri);
        return {};
    });
    server.registerTool(
        'touch',
        { description: 'Says that a resource changed.', inputSchema: z.object({ uri: z.string() }) },
        async ({ uri }) => {
            if (notifier) {
                notifier.resourceUpdated(uri);
                notifier.resourcesChanged();
                notifier.promptsChanged();
            } else {
                for (const other of live) {
                    if (!other.isConnected()) continue;
                    // A 2025 client hears about what it subscribed to; serveStdio routes
                    // these onto a 2026-07-28 client's listen by its filter.
                    if (other.server._servedModernEra() || subscribed.has(uri)) {
                        await other.server.sendResourceUpdated({ uri });
                    }
                    await other.server.sendResourceListChanged();
                    await other.server.sendPromptListChanged();
                }
            }
            return { content: [{ type: 'text', text: `touched ${uri}` }] };
        }
    );
    server.registerTool('log', { description: 'Logs two lines.' }, async ctx => {
        await ctx.mcpReq.log('info', 'an info line');
        await ctx.mcpReq.log('debug', 'a debug line');
        return { content: [{ type: 'text', text: 'logged' }] };
    });
    server.registerTool(
        'wait',
        { description: 'Waits, unless cancelled.', inputSchema: z.object({ ms: z.number() }) },
        async ({ ms }, ctx) =>
            new Promise(resolve => {
                const signal = ctx.mcpReq.signal;
                started += 1;
                let done = false;
                const timer = setTimeout(() => {
                    done = true;
                    resolve({ content: [{ type: 'text', text: 'waited' }] });
                }, ms);
                signal?.addEventListener('abort', () => {
                    // The signal also fires once an answered request's stream closes.
                    if (done) return;
                    done = true;
                    clearTimeout(timer);
                    cancelled += 1;
                    resolve({ content: [{ type: 'text', text: 'cancelled' }] });
                });
            })
    );
    server.registerTool('capabilities', { description: 'Says what the client declared.' }, async ctx => ({
        content: [
            {
                type: 'text',
                text: JSON.stringify(
                    ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ??
                        server.server.getClientCapabilities() ??
                        null
                )
            }
        ]
    }));
    server.registerTool('waits', { description: 'Counts waits begun and cancelled.' }, async () => ({
        content: [{ type: 'text', text: JSON.stringify({ started, cancelled }) }]
    }));
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
