#!/usr/bin/env node
// An MCP client built with the official TypeScript SDK, v1 (`@modelcontextprotocol/sdk`,
// the 2025-11-25 `initialize` era) or v2 (`@modelcontextprotocol/client`, either era).
// mcpbox's gateway tests run it against `mcpbox serve`:
//
//   node tests/peers/ts_client.mjs --sdk v1|v2 [--era legacy|2026-07-28] [--token TOKEN]
//        (--http URL | --stdio COMMAND ARGS...) [--call NAME JSON]... [--approve]
//
// It connects, lists every tool (following nextCursor), makes each --call in turn and
// prints one JSON line: {"protocolVersion", "tools": [names], "calls": [CallToolResult]}.
// With --approve it declares the elicitation capability and accepts every question
// with {"approve": true} (and the defaults of other fields, or the first option of a
// required choice without one). --stdio takes the rest of
// the command line; --token sends `Authorization: Bearer TOKEN` over HTTP. With MCPBOX_TEST_SAMPLE=TEXT in its environment it declares the
// sampling capability and answers every sampling/createMessage with TEXT, from the
// model "ts-client", saying how many messages and tools it was given. With
// MCPBOX_TEST_ACCEPT=empty, --approve accepts with {} instead (as a client that shows
// only yes and no does); with MCPBOX_TEST_ACCEPT=no, with {"approve": false}.
// With MCPBOX_TEST_TASKS=1 (v1 only) every call runs as a task
// (`client.experimental.tasks.callToolStream` with `task: {ttl}`), and the report adds
// "tasks": per call, the task's id and each status it was seen in.

const argv = process.argv.slice(2);
let sdk = 'v2';
let era = 'legacy';
let http;
let token;
let stdio;
let approve = false;
const calls = [];
for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--sdk') sdk = argv[++i];
    else if (a === '--era') era = argv[++i];
    else if (a === '--http') http = argv[++i];
    else if (a === '--token') token = argv[++i];
    else if (a === '--call') calls.push([argv[++i], JSON.parse(argv[++i])]);
    else if (a === '--approve') approve = true;
    else if (a === '--stdio') {
        stdio = argv.slice(i + 1);
        break;
    } else throw new Error(`unknown argument ${a}`);
}

const sample = process.env.MCPBOX_TEST_SAMPLE;
let Client, StdioClientTransport, StreamableHTTPClientTransport, ElicitRequestSchema, CreateMessageRequestSchema;
if (sdk === 'v1') {
    ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
    ({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
    ({ StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
    ({ ElicitRequestSchema, CreateMessageRequestSchema } = await import('@modelcontextprotocol/sdk/types.js'));
} else {
    ({ Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client'));
    ({ StdioClientTransport } = await import('@modelcontextprotocol/client/stdio'));
}

const options = { capabilities: approve ? { elicitation: { form: {} } } : {} };
if (sample !== undefined) options.capabilities.sampling = {};
if (sdk === 'v2' && era !== 'legacy') options.versionNegotiation = { mode: { pin: era } };
const client = new Client({ name: `ts-${sdk}-client`, version: '1.0.0' }, options);
if (approve) {
    const answer = async (request) => {
        const schema = request.params.requestedSchema ?? {};
        const content = {};
        const accept = process.env.MCPBOX_TEST_ACCEPT;
        if (accept === 'empty') return { action: 'accept', content };
        for (const [key, spec] of Object.entries(schema.properties ?? {})) {
            if (key === 'approve') content[key] = accept !== 'no';
            else if ('default' in spec) content[key] = spec.default;
            // A required choice without a default: its first option.
            else if ((schema.required ?? []).includes(key)) {
                const first = spec.oneOf?.[0]?.const ?? spec.enum?.[0];
                if (first !== undefined) content[key] = first;
            }
        }
        return { action: 'accept', content };
    };
    if (sdk === 'v1') client.setRequestHandler(ElicitRequestSchema, answer);
    else client.setRequestHandler('elicitation/create', answer);
}

if (sample !== undefined) {
    const answer = async (request) => ({
        role: 'assistant',
        content: {
            type: 'text',
            text: `${sample} (${request.params.messages.length} messages, ${(request.params.tools ?? []).length} tools)`,
        },
        model: 'ts-client',
        stopReason: 'endTurn',
    });
    if (sdk === 'v1') client.setRequestHandler(CreateMessageRequestSchema, answer);
    else client.setRequestHandler('sampling/createMessage', answer);
}

const transport = http
    ? new StreamableHTTPClientTransport(new URL(http), {
          requestInit: token === undefined ? undefined : { headers: { Authorization: `Bearer ${token}` } },
      })
    : new StdioClientTransport({ command: stdio[0], args: stdio.slice(1), stderr: 'inherit' });
await client.connect(transport);

const tools = [];
let cursor;
do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
} while (cursor);

const results = [];
const tasks = [];
for (const [name, args] of calls) {
    if (process.env.MCPBOX_TEST_TASKS !== '1') {
        results.push(await client.callTool({ name, arguments: args }));
        continue;
    }
    const seen = { taskId: null, statuses: [] };
    const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, undefined, {
        task: { ttl: 60000 },
    });
    for await (const message of stream) {
        if (message.type === 'taskCreated') {
            seen.taskId = message.task.taskId;
            seen.statuses.push(message.task.status);
        } else if (message.type === 'taskStatus') {
            seen.statuses.push(message.task.status);
        } else if (message.type === 'result') {
            results.push(message.result);
        } else if (message.type === 'error') {
            results.push({ isError: true, content: [{ type: 'text', text: `stream error: ${message.error}` }] });
        }
    }
    tasks.push(seen);
}

const protocolVersion =
    typeof client.getNegotiatedProtocolVersion === 'function'
        ? client.getNegotiatedProtocolVersion()
        : transport.protocolVersion;
console.log(JSON.stringify({ protocolVersion, tools, calls: results, tasks }));
await client.close();
