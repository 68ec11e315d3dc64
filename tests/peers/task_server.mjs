#!/usr/bin/env node
// A small MCP server whose tool runs as a task when its client asks (MCP 2025-11-25
// tasks: `execution.taskSupport: "optional"`), built with the official TypeScript
// SDK v1 (`@modelcontextprotocol/sdk`, its experimental tasks: `registerToolTask`,
// `InMemoryTaskStore`), the same SDK and task store server-everything uses for its
// `required` tool. mcpbox's integration tests run it as a real peer over stdio:
//
//     node tests/peers/task_server.mjs
//
// Tools:
//   count(steps: integer, ms: integer)  counts to STEPS, one step every MS
//                                       milliseconds, and answers "counted to STEPS".
//                                       Called with `task`, it runs as a task whose
//                                       status message is "step I of STEPS" at each
//                                       step (pollInterval 100 ms); called plainly,
//                                       the SDK runs the same task and answers with
//                                       its result.
//   plain()                             "plain": a tool that takes no task.
// Capabilities: tools; tasks with `list`, `cancel` and `requests.tools.call`.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import * as z from 'zod';

const taskStore = new InMemoryTaskStore();
const server = new McpServer(
  { name: 'task-peer', version: '1.0.0' },
  {
    capabilities: {
      tools: {},
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    },
    taskStore,
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  },
);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Steps task TASKID through STEPS statuses, then stores its result. */
async function count(taskId, steps, ms, store) {
  for (let i = 1; i <= steps; i++) {
    await store.updateTaskStatus(taskId, 'working', `step ${i} of ${steps}`);
    await sleep(ms);
  }
  await store.storeTaskResult(taskId, 'completed', {
    content: [{ type: 'text', text: `counted to ${steps}` }],
  });
}

server.experimental.tasks.registerToolTask(
  'count',
  {
    description: 'Counts to STEPS, one step every MS milliseconds; runs as a task when asked',
    inputSchema: { steps: z.number().int().min(1).max(100), ms: z.number().int().min(0).max(10000) },
    execution: { taskSupport: 'optional' },
  },
  {
    createTask: async ({ steps, ms }, extra) => {
      const task = await extra.taskStore.createTask({ ttl: 300000, pollInterval: 100 });
      count(task.taskId, steps, ms, extra.taskStore).catch((error) =>
        extra.taskStore.updateTaskStatus(task.taskId, 'failed', String(error)).catch(() => {}),
      );
      return { task };
    },
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId),
  },
);

server.registerTool('plain', { description: 'Answers "plain"; takes no task' }, async () => ({
  content: [{ type: 'text', text: 'plain' }],
}));

await server.connect(new StdioServerTransport());
