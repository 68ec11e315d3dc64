#!/usr/bin/env node
// The upstream MCP server of the conformance tests through the gateway: the tools
// the official conformance suite's server scenarios call (`test_simple_text`,
// `test_tool_with_progress`, `test_elicitation`, …), each as the scenario's own
// description asks, written on the TypeScript SDK v2 (`@modelcontextprotocol/server`).
// tests/tests/all/conformance_server.rs runs every server scenario against this server
// directly over Streamable HTTP and through `mcpbox serve` (which runs it over
// stdio), and compares.
//
//     node tests/peers/conformance_server.mjs              stdio
//     node tests/peers/conformance_server.mjs --http PORT  Streamable HTTP at /mcp
//
// Besides the tools: the resources (`test://static-text`, `test://static-binary`, the
// template `test://template/{id}/data`), prompts (`test_simple_prompt`,
// `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`,
// `test_prompt_with_image`) and completions the resources-*, prompts-* and
// completion-complete scenarios ask for, and a catalog of two skills (the SDK's skills
// extension) for the sep-2640-skills-* scenarios. No resource subscriptions: mcpbox does not
// pass them through yet, so resources-subscribe fails here directly too.
//
// And the plain tools the tasks-* scenarios call (greet, slow_compute, failing_job,
// protocol_error_job, confirm_delete, multi_input, test_tool_with_task). This server has
// no tasks extension: it runs each as an ordinary call. Through `mcpbox serve` a client
// that takes tasks gets the gateway's own task for each that runs long, so the
// task-supporting ones take about a second before they answer or ask.

import { createServer } from 'node:http';

import { toNodeHandler } from '@modelcontextprotocol/node';
import {
    McpServer,
    ProtocolError,
    ProtocolErrorCode,
    ResourceTemplate,
    completable,
    createMcpHandler,
    fromJsonSchema,
    inputRequired
} from '@modelcontextprotocol/server';
import { SkillsExtension, memorySkillFiles } from '@modelcontextprotocol/server/ext/skills';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

// A 1×1 red PNG and a tiny silent WAV.
const PNG =
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';

const SCHEMA_2020_12 = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
        address: {
            $anchor: 'addressDef',
            type: 'object',
            properties: { street: { type: 'string' }, city: { type: 'string' } }
        }
    },
    properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' }
    },
    allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
    if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
    then: { required: ['phone'] },
    else: { required: ['email'] },
    additionalProperties: false
};

const text = (t) => ({ content: [{ type: 'text', text: t }] });

// Asks the client a question in the era of the request: a 2025 request sends
// `elicitation/create`; a 2026-07-28 one answers `input_required` and reads the
// answer from the retry's `inputResponses`. `finish` makes the result from it.
async function elicit(ctx, params, finish) {
    if (ctx.mcpReq.envelope) {
        const answer = ctx.mcpReq.inputResponses?.ask;
        if (answer === undefined) return inputRequired({ inputRequests: { ask: inputRequired.elicit(params) } });
        return finish(answer);
    }
    return finish(await ctx.mcpReq.elicitInput(params));
}
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Asks several questions at once, as `elicit` asks one: `questions` maps keys to
// elicitation params; `finish` gets the answers by key.
async function elicitAll(ctx, questions, finish) {
    const keys = Object.keys(questions);
    if (ctx.mcpReq.envelope) {
        const answers = ctx.mcpReq.inputResponses ?? {};
        if (keys.some((k) => answers[k] === undefined)) {
            const inputRequests = Object.fromEntries(keys.map((k) => [k, inputRequired.elicit(questions[k])]));
            return inputRequired({ inputRequests });
        }
        return finish(answers);
    }
    const answers = await Promise.all(keys.map((k) => ctx.mcpReq.elicitInput(questions[k])));
    return finish(Object.fromEntries(keys.map((k, i) => [k, answers[i]])));
}

// A yes-or-no question for the tasks-* fixtures.
const confirm = (message) => ({
    message,
    requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' }, name: { type: 'string' } } }
});

// How long the tasks-* fixtures that run as tasks work before they answer or ask.
const WORK_MS = 1000;

// The skills the sep-2640-skills-* scenarios list, get and read, each with a
// supporting file in a subdirectory (the directory scenario descends into the
// first skill's), served under `skill://` by the SDK's catalog.
const skills = await SkillsExtension.load(
    memorySkillFiles({
        'pdf-processing/SKILL.md':
            '---\nname: pdf-processing\ndescription: Extract text and tables from PDF files.\n---\n\nRead references/FORMS.md for forms.\n',
        'pdf-processing/references/FORMS.md': '# Forms\n\nFill each field in order.\n',
        'code-review/SKILL.md': '---\nname: code-review\ndescription: Review a change for bugs and style.\n---\n\nRead the diff first.\n',
        'code-review/references/STYLE.md': '# Style\n\nName things for what they do.\n'
    }),
    { strict: true }
);

function build() {
    const server = new McpServer(
        { name: 'conformance-upstream', version: '1.0.0' },
        { capabilities: { tools: {}, logging: {}, resources: {}, prompts: {}, completions: {} } }
    );
    // A tool without an input schema gets the context as its only argument.
    const tool = (name, description, handler, inputSchema) =>
        inputSchema
            ? server.registerTool(name, { description, inputSchema }, handler)
            : server.registerTool(name, { description }, (ctx) => handler({}, ctx));

    tool('test_simple_text', 'Returns simple text.', async () => text('This is a simple text response for testing.'));
    tool('test_image_content', 'Returns an image.', async () => ({
        content: [{ type: 'image', data: PNG, mimeType: 'image/png' }]
    }));
    tool('test_audio_content', 'Returns audio.', async () => ({
        content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }]
    }));
    tool('test_embedded_resource', 'Returns an embedded resource.', async () => ({
        content: [
            {
                type: 'resource',
                resource: {
                    uri: 'test://embedded-resource',
                    mimeType: 'text/plain',
                    text: 'This is an embedded resource content.'
                }
            }
        ]
    }));
    tool('test_multiple_content_types', 'Returns text, an image and a resource.', async () => ({
        content: [
            { type: 'text', text: 'Multiple content types test:' },
            { type: 'image', data: PNG, mimeType: 'image/png' },
            {
                type: 'resource',
                resource: {
                    uri: 'test://mixed-content-resource',
                    mimeType: 'application/json',
                    text: '{"test":"data","value":123}'
                }
            }
        ]
    }));
    tool('test_tool_with_logging', 'Logs three messages while it runs.', async (_args, ctx) => {
        await ctx.mcpReq.log('info', 'Tool execution started');
        await pause(50);
        await ctx.mcpReq.log('info', 'Tool processing data');
        await pause(50);
        await ctx.mcpReq.log('info', 'Tool execution completed');
        return text('Logging tool executed');
    });
    tool('test_error_handling', 'Always fails.', async () => ({
        isError: true,
        content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }]
    }));
    tool('test_tool_with_progress', 'Reports progress 0, 50, 100 of 100.', async (_args, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
            if (token !== undefined) {
                await ctx.mcpReq.notify({
                    method: 'notifications/progress',
                    params: { progressToken: token, progress, total: 100 }
                });
            }
            if (progress < 100) await pause(50);
        }
        return text('Progress tool executed');
    });
    tool(
        'test_sampling',
        'Asks the client for an LLM completion.',
        async ({ prompt }, ctx) => {
            const result = await ctx.mcpReq.requestSampling({
                messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
                maxTokens: 100
            });
            return text(`LLM response: ${result.content?.text ?? JSON.stringify(result.content)}`);
        },
        z.object({ prompt: z.string() })
    );
    tool(
        'test_elicitation',
        'Asks the user for a name and an email.',
        async ({ message }, ctx) =>
            elicit(ctx, {
                message,
                requestedSchema: {
                    type: 'object',
                    properties: {
                        username: { type: 'string', description: "User's response" },
                        email: { type: 'string', description: "User's email address" }
                    },
                    required: ['username', 'email']
                }
            }, (result) => text(`User response: ${JSON.stringify(result)}`)),
        z.object({ message: z.string() })
    );
    const completed = (result) =>
        text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
    tool('test_elicitation_sep1034_defaults', 'Asks with defaults of every primitive type.', async (_args, ctx) =>
        elicit(ctx, {
            message: 'Please review your details',
            requestedSchema: {
                type: 'object',
                properties: {
                    name: { type: 'string', default: 'John Doe' },
                    age: { type: 'integer', default: 30 },
                    score: { type: 'number', default: 95.5 },
                    status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
                    verified: { type: 'boolean', default: true }
                }
            }
        }, completed)
    );
    tool('test_elicitation_sep1330_enums', 'Asks with every enum form.', async (_args, ctx) =>
        elicit(ctx, {
            message: 'Pick some options',
            requestedSchema: {
                type: 'object',
                properties: {
                    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
                    titledSingle: {
                        type: 'string',
                        oneOf: [
                            { const: 'value1', title: 'First Option' },
                            { const: 'value2', title: 'Second Option' },
                            { const: 'value3', title: 'Third Option' }
                        ]
                    },
                    legacyEnum: {
                        type: 'string',
                        enum: ['opt1', 'opt2', 'opt3'],
                        enumNames: ['Option One', 'Option Two', 'Option Three']
                    },
                    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
                    titledMulti: {
                        type: 'array',
                        items: {
                            anyOf: [
                                { const: 'value1', title: 'First Choice' },
                                { const: 'value2', title: 'Second Choice' },
                                { const: 'value3', title: 'Third Choice' }
                            ]
                        }
                    }
                }
            }
        }, completed)
    );
    tool(
        'json_schema_2020_12_tool',
        'Tool with JSON Schema 2020-12 features',
        async () => text('ok'),
        fromJsonSchema(SCHEMA_2020_12)
    );
    // The tasks-* scenarios' fixtures.
    tool('greet', 'Greets by name at once.', async ({ name }) => text(`Hello, ${name}!`), z.object({ name: z.string() }));
    tool(
        'slow_compute',
        'Works `seconds` seconds, then says so.',
        async ({ seconds, label }) => {
            await pause(seconds * 1000);
            return text(`computed ${label ?? ''} after ${seconds}s`);
        },
        z.object({ seconds: z.number(), label: z.string().optional() })
    );
    tool('failing_job', 'Fails with a tool error after a second.', async () => {
        await pause(WORK_MS);
        return { isError: true, content: [{ type: 'text', text: 'failing_job failed, as it always does' }] };
    });
    // Its handler never runs: the request handler below answers it with a JSON-RPC error.
    tool('protocol_error_job', 'Fails with a JSON-RPC error after a second.', async () => text('unreachable'));
    tool(
        'confirm_delete',
        'Works a second, then asks to confirm deleting `filename`.',
        async ({ filename }, ctx) => {
            await pause(WORK_MS);
            return elicit(ctx, confirm(`Delete ${filename}?`), (answer) =>
                text(`confirm_delete ${filename}: ${answer.action} ${JSON.stringify(answer.content ?? {})}`)
            );
        },
        z.object({ filename: z.string() })
    );
    tool('multi_input', 'Works a second, then asks two questions at once.', async (_args, ctx) => {
        await pause(WORK_MS);
        return elicitAll(ctx, { first: confirm('First?'), second: confirm('Second?') }, (answers) =>
            text(`multi_input: ${JSON.stringify(answers)}`)
        );
    });
    tool('test_tool_with_task', 'Asks for a user name, then works a second and greets.', async (_args, ctx) =>
        elicit(
            ctx,
            { message: 'Your name?', requestedSchema: { type: 'object', properties: { user_name: { type: 'string' } } } },
            async (answer) => {
                await pause(WORK_MS);
                const name = answer.content?.user_name ?? answer.content?.name ?? 'nobody';
                return text(`Hello, ${name}!`);
            }
        )
    );
    const calls = server.server._getRequestHandler('tools/call');
    server.server.removeRequestHandler('tools/call');
    server.server.setRequestHandler('tools/call', async (request, ctx) => {
        if (request.params.name !== 'protocol_error_job') return calls(request, ctx);
        await pause(WORK_MS);
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'protocol_error_job failed with a JSON-RPC error, on purpose');
    });
    server.registerResource(
        'static-text',
        'test://static-text',
        { description: 'A static text resource.', mimeType: 'text/plain' },
        async (uri) => ({
            contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]
        })
    );
    server.registerResource(
        'static-binary',
        'test://static-binary',
        { description: 'A static binary resource (a PNG).', mimeType: 'image/png' },
        async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] })
    );
    server.registerResource(
        'template',
        new ResourceTemplate('test://template/{id}/data', { list: undefined }),
        { description: 'Data by id.', mimeType: 'application/json' },
        async (uri, { id }) => ({
            contents: [
                {
                    uri: uri.href,
                    mimeType: 'application/json',
                    text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
                }
            ]
        })
    );
    server.registerPrompt('test_simple_prompt', { description: 'A simple prompt.' }, () => ({
        messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }]
    }));
    server.registerPrompt(
        'test_prompt_with_arguments',
        {
            description: 'A prompt with two arguments.',
            argsSchema: z.object({
                arg1: completable(z.string().describe('First test argument'), (value) =>
                    ['test', 'testing', 'tested'].filter((v) => v.startsWith(value))
                ),
                arg2: z.string().describe('Second test argument')
            })
        },
        ({ arg1, arg2 }) => ({
            messages: [
                { role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }
            ]
        })
    );
    server.registerPrompt(
        'test_prompt_with_embedded_resource',
        {
            description: 'A prompt that embeds a resource.',
            argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') })
        },
        ({ resourceUri }) => ({
            messages: [
                {
                    role: 'user',
                    content: {
                        type: 'resource',
                        resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' }
                    }
                },
                { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } }
            ]
        })
    );
    server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image.' }, () => ({
        messages: [
            { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
            { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } }
        ]
    }));
    skills.attach(server);
    return server;
}

const onerror = (error) => console.error(`conformance-upstream: ${error.message}`);
const args = process.argv.slice(2);
if (args.length === 0) {
    serveStdio(() => build(), { onerror });
} else if (args.length === 2 && args[0] === '--http' && /^\d+$/.test(args[1])) {
    const node = toNodeHandler(createMcpHandler(() => build(), { onerror }));
    const server = createServer((req, res) => {
        if (new URL(req.url, 'http://x').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        node(req, res);
    });
    server.listen(Number(args[1]), '127.0.0.1', () => {
        console.error(`conformance-upstream listening on http://127.0.0.1:${server.address().port}/mcp`);
    });
} else {
    console.error('usage: conformance_server.mjs [--http PORT]');
    process.exit(2);
}
