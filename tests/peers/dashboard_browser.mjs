// The dashboard in a real browser: headless Chromium (the system's, see
// scripts/install-peers) driven by playwright-core (pinned in package.json; it
// downloads no browser). Run by tests/tests/all/gateway/dashboard.rs against
// `mcpbox serve --http` over a configuration with two servers:
//
//   fx    the fixture server, connected at once;
//   slow  a shell that waits for a line on the FIFO GATE, then runs the fixture.
//
// Usage: MCPBOX_TOKEN=TOKEN node dashboard_browser.mjs BASE_URL GATE SHOTS_DIR [--load-only]
//
// TOKEN is the gateway's bearer token: the page gets it in its URL's #token=
// fragment, as `mcpbox serve --http` prints it, and the calls made here send it.
// The page is served under a strict Content-Security-Policy; a violation it
// reports (an inline script or style the policy does not allow) fails the run.
//
// The page must show `slow` starting (○), then connected (●) once the gate opens;
// a call to fx__echo appear with its outcome and duration; its form call a tool
// (fx's echo), and a call an `ask` rule holds (fx's add) wait for an approval the
// page answers, approved once then denied; fx's log message appear in its log,
// and its calls in the chart; a crash of `fx` turn its row red (✗) with the
// reason. A screenshot is kept after each step in SHOTS_DIR, and `dashboard.png`
// (for docs/gateway.md) with an approval waiting.
// With --load-only it only measures how long the page takes to show every tool
// (for the 10,000-tool measurement) and prints {"loadMs": N, "tools": N}.
// Prints one JSON line on success; exits non-zero with the reason otherwise.

import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [base, gate, shots, mode] = process.argv.slice(2);
const executablePath = process.env.MCPBOX_CHROMIUM || "/usr/bin/chromium";
const token = process.env.MCPBOX_TOKEN;
const pageUrl = base + "/" + (token ? "#token=" + encodeURIComponent(token) : "");
// Each wait is for something the page must show; generous for a busy two-core machine.
const STEP_MS = 30_000;

// A 2026-07-28 tools/call to the gateway, as any stateless MCP client sends it.
async function call(name, args) {
  const body = {
    jsonrpc: "2.0", id: 1, method: "tools/call",
    params: {
      name, arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { name: "dashboard-test", version: "1" },
      },
    },
  };
  const r = await fetch(base + "/mcp", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "Mcp-Method": "tools/call",
      "Mcp-Name": name,
      ...(token ? { Authorization: "Bearer " + token } : {}),
    },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`tools/call ${name}: HTTP ${r.status}: ${text}`);
  return text;
}

const browser = await chromium.launch({
  executablePath,
  // Root in a container has no user namespaces for Chromium's sandbox.
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy/i.test(m.text())) errors.push(m.text());
  });
  mkdirSync(shots, { recursive: true });
  const shot = async (name) => {
    const path = join(shots, name + ".png");
    // The servers and calls are at the top; opening a tool may have scrolled away.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path, fullPage: false });
    return path;
  };

  if (mode === "--load-only") {
    const started = Date.now();
    await page.goto(pageUrl);
    await page.waitForFunction(() => {
      const c = document.getElementById("tool-count").textContent;
      return document.querySelectorAll("#tools details").length > 0 && c.startsWith("(");
    }, null, { timeout: STEP_MS });
    const loadMs = Date.now() - started;
    // The list is drawn in chunks: count it once the last one is painted.
    await page.waitForFunction(() => performance.getEntriesByName("tools-painted").length > 0,
      null, { timeout: STEP_MS });
    const tools = await page.locator("#tools details").count();
    // Where the time went, from the page's own clock (ms since navigation start).
    const breakdown = await page.evaluate(() => {
      const r = performance.getEntriesByType("resource").find((e) => e.name.endsWith("/api/tools"));
      const drawn = performance.getEntriesByName("tools-drawn")[0];
      const painted = performance.getEntriesByName("tools-painted")[0];
      const shown = performance.getEntriesByName("tools-shown")[0];
      const nav = performance.getEntriesByType("navigation")[0];
      return {
        pageLoaded: Math.round(nav.loadEventEnd),
        toolsRequested: Math.round(r.startTime),
        toolsReceived: Math.round(r.responseEnd),
        toolsShown: Math.round(shown.startTime),
        toolsDrawn: Math.round(drawn.startTime),
        toolsPainted: Math.round(painted.startTime),
      };
    });
    await shot("many-tools");
    console.log(JSON.stringify({ loadMs, tools, ...breakdown }));
  } else {
    const shown = [];
    await page.goto(pageUrl);
    await page.locator("#live", { hasText: "live" }).waitFor({ timeout: STEP_MS });

    // 1. `slow` is starting: it waits on the gate.
    const slow = page.locator('tr[data-server="slow"]');
    await page.locator('tr[data-server="slow"][data-state="starting"]').waitFor({ timeout: STEP_MS });
    if ((await slow.locator(".sym").textContent()).trim() !== "○") throw new Error("starting is not ○");
    shown.push(await shot("1-starting"));

    // 2. The gate opens: `slow` connects, live, without a reload of the page.
    writeFileSync(gate, "go\n");
    await page.locator('tr[data-server="slow"][data-state="connected"]').waitFor({ timeout: STEP_MS });
    if ((await slow.locator(".sym").textContent()).trim() !== "●") throw new Error("connected is not ●");
    // Its tools are listed, with their schemas on demand.
    const tool = page.locator('#tools details[data-tool="mcp__slow__echo"]');
    await tool.waitFor({ timeout: STEP_MS });
    await tool.locator("summary").click();
    await tool.locator("pre", { hasText: '"type": "object"' }).waitFor({ timeout: STEP_MS });
    shown.push(await shot("2-connected"));

    // 3. A call appears with its outcome and duration.
    await call("fx__echo", { text: "from the browser test" });
    const row = page.locator('#calls tr[data-tool="echo"][data-outcome="ok"]');
    await row.waitFor({ timeout: STEP_MS });
    const cells = await row.locator("td").allTextContents();
    if (!cells.includes("fx") || !cells.some((c) => / ms$/.test(c))) {
      throw new Error("the call row lacks its server or duration: " + JSON.stringify(cells));
    }
    shown.push(await shot("3-call"));

    // 4. Try a tool: the form built from fx's echo's input schema calls it.
    const echo = page.locator('#tools details[data-tool="mcp__fx__echo"]');
    await echo.locator("summary").click();
    await echo.locator('input[data-field="text"]').fill("from the form");
    await echo.locator("button.call").click();
    const echoed = echo.locator('pre.result[data-outcome="ok"]');
    await echoed.waitFor({ timeout: STEP_MS });
    if ((await echoed.textContent()) !== "from the form") throw new Error("the form's call answered " + await echoed.textContent());
    await page.locator('#calls tr[data-tool="echo"]').nth(1).waitFor({ timeout: STEP_MS });

    // 5. fx's add is under an `ask` rule: the form's call waits for an approval,
    // which the page shows and answers.
    const add = page.locator('#tools details[data-tool="mcp__fx__add"]');
    await add.locator("summary").click();
    const askAndAnswer = async (a, b, answer) => {
      await add.locator('input[data-field="a"]').fill(String(a));
      await add.locator('input[data-field="b"]').fill(String(b));
      await add.locator("button.call").click();
      const pending = page.locator("#approvals li", { hasText: "mcp__fx__add" });
      await pending.waitFor({ timeout: STEP_MS });
      const args = JSON.parse(await pending.locator("pre").textContent());
      if (args.a !== a || args.b !== b) throw new Error("the approval shows " + JSON.stringify(args));
      if (!(await add.locator(".status").textContent()).includes("calling")) throw new Error("the call did not wait");
      return async () => {
        await pending.locator(`button[data-answer="${answer}"]`).click();
        await pending.waitFor({ state: "detached", timeout: STEP_MS });
      };
    };
    // Its log message and the calls so far are kept for the log and the chart.
    await call("fx__log", { text: "a log line from the browser test" });
    await page.locator("#log-server").selectOption("fx");
    await page.locator("#log .message", { hasText: "a log line from the browser test" }).waitFor({ timeout: STEP_MS });
    await page.locator("#log .stderr", { hasText: "a log line from the browser test" }).waitFor({ timeout: STEP_MS });
    await page.locator('.chart[data-chart="fx"] svg rect.bar').first().waitFor({ timeout: STEP_MS });
    // A flat line has no height, which Playwright counts as hidden: attached is enough.
    const p95 = page.locator('.chart[data-chart="fx"] svg polyline.p95');
    await p95.waitFor({ state: "attached", timeout: STEP_MS });
    if (!/^[\d.]+,[\d.]+ /.test(await p95.getAttribute("points"))) throw new Error("no p95 line");
    const approve = await askAndAnswer(2, 3, "once");
    const docs = join(shots, "dashboard.png");
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: docs, fullPage: false });
    shown.push(docs);
    await approve();
    const sum = add.locator('pre.result[data-outcome="ok"]');
    await sum.waitFor({ timeout: STEP_MS });
    if (!(await sum.textContent()).startsWith("5")) throw new Error("the approved call answered " + await sum.textContent());
    const deny = await askAndAnswer(4, 4, "deny");
    await deny();
    const denied = add.locator('pre.result[data-outcome="denied"]');
    await denied.waitFor({ timeout: STEP_MS });
    if (!(await denied.textContent()).includes("was not approved")) throw new Error("the denial reads " + await denied.textContent());
    shown.push(await shot("5-approvals"));

    // 6. fx crashes: its row turns red, with the reason.
    await call("fx__crash", {});
    // Read from the row in one step: the page redraws a row as its server's
    // events arrive, and a style read from a row just replaced is empty.
    const failed = await page
      .waitForFunction(
        () => {
          const r = document.querySelector('tr[data-server="fx"][data-state="failed"]');
          const sym = r && r.querySelector(".sym");
          const error = r && r.querySelector(".error");
          return sym && error && {
            reason: error.textContent,
            sym: sym.textContent.trim(),
            color: getComputedStyle(sym).color,
          };
        },
        null,
        { timeout: STEP_MS },
      )
      .then((handle) => handle.jsonValue());
    if (!failed.reason.includes("crashing with exit code 1")) throw new Error("no reason shown: " + failed.reason);
    if (failed.sym !== "✗") throw new Error("failed is not ✗");
    if (failed.color !== "rgb(207, 34, 46)") throw new Error("the failed symbol is not red: " + failed.color);
    await page.locator('#calls tr[data-tool="crash"]').waitFor({ timeout: STEP_MS });
    // Its tools left with it.
    await page.locator('#tools details[data-tool="mcp__fx__echo"]').waitFor({ state: "detached", timeout: STEP_MS });
    shown.push(await shot("6-crashed"));

    if (errors.length) throw new Error("the page threw: " + errors.join("; "));
    console.log(JSON.stringify({ ok: true, screenshots: shown }));
  }
} finally {
  await browser.close();
}
