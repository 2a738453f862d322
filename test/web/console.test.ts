import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alice, httpOp, operationsApi, operator, roomyAdmission, startUpstream, writeFiles } from "../support/operations.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";

// Debian's chromium (platform.md §5); CI installs it, a machine without it skips these tests and says why.
const chromiumPath = "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);
const screenshots = path.join(projectRoot, "test-results/screenshots");

describe.skipIf(!hasChromium)(`the web console in Chromium${hasChromium ? "" : " (skipped: no /usr/bin/chromium; apt-get install -y chromium)"}`, () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  /** The Connect request bodies of every StreamingChat the page sent. */
  const chatRequests: Record<string, any>[] = [];
  let listRequestsCalls = 0;

  const screenshot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  async function openTab(name: string) {
    await page.click(`nav [data-tab="${name}"]`);
    const shown = await page.locator("[data-panel]:visible").evaluateAll((panels) => panels.map((panel) => panel.id));
    expect(shown).toEqual([name]);
  }

  beforeAll(async () => {
    // The console under test is the current source: build it where the server serves it from (dist/web).
    await build({ configFile: path.join(projectRoot, "vite.config.ts"), logLevel: "silent" });
    mkdirSync(screenshots, { recursive: true });
    [llm, upstream] = await Promise.all([ScriptedLlm.start("openai"), startUpstream()]);
    server = await startTestServer({ env: { ...llm.env, ...writeFiles(upstream.url, roomyAdmission) } });
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    page.on("request", (request) => {
      // A Connect stream: one enveloped message (flags, length, then the JSON); the JSON starts at its first `{"`.
      const body = request.url().endsWith(".AgentService/StreamingChat") ? request.postDataBuffer()?.toString() : undefined;
      if (body) chatRequests.push(JSON.parse(body.slice(body.indexOf('{"'))));
      if (request.url().endsWith(".OperatorService/ListRequests")) listRequestsCalls++;
    });
    await page.goto(server.url);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await llm?.close();
    upstream?.close();
  });

  it("lists the public networks with their descriptions and tags", async () => {
    const networks = page.locator("#network-list .network");
    await expect.poll(() => networks.count()).toBe(4);
    const helloWorld = page.locator('.network[data-network="hello_world"]');
    expect(await helloWorld.locator("p").textContent()).toBe("Greets you in the language of your choice.");
    expect(await helloWorld.locator(".tag").allTextContents()).toEqual(["example", "greeting"]);
  });

  it("draws a picked network's connectivity as a graph with one node per entry, the front man on top", async () => {
    for (const network of ["music_nerd", "trip_planner", "hello_world"]) {
      const connectivity = (await (await fetch(`${server.url}/api/v1/${network}/connectivity`)).json()) as { connectivity_info: { origin: string }[] };
      await page.click(`.network[data-network="${network}"]`);
      await expect.poll(() => page.locator("#network-title").textContent()).toBe(network);
      const nodes = page.locator("#network-graph svg g.node");
      await expect.poll(() => nodes.count()).toBe(connectivity.connectivity_info.length);
      const names = await nodes.evaluateAll((groups) => groups.map((group) => group.getAttribute("data-name")));
      expect(new Set(names)).toEqual(new Set(connectivity.connectivity_info.map((entry) => entry.origin)));
      const frontMan = page.locator(`#network-graph g.node[data-name="${connectivity.connectivity_info[0]!.origin}"]`);
      const frontY = (await frontMan.boundingBox())!.y;
      for (const box of await nodes.evaluateAll((groups) => groups.map((group) => group.getBoundingClientRect().y))) expect(box).toBeGreaterThanOrEqual(frontY);
      await screenshot(`graph-${network}`);
    }
    expect(await page.locator("#network-graph svg path.edge").count()).toBe(1);
  });

  it("refuses sly_data that is not a JSON object before sending anything", async () => {
    await page.click("details.sly-data summary");
    await page.fill('textarea[name="sly_data"]', "{not json");
    await page.fill('textarea[name="message"]', "Welsh");
    await page.click('.chat-form button[type="submit"]');
    await expect.poll(() => page.locator(".sly-error").textContent()).toContain("sly_data is not JSON");
    await page.fill('textarea[name="sly_data"]', "[1, 2]");
    await page.click('.chat-form button[type="submit"]');
    await expect.poll(() => page.locator(".sly-error").textContent()).toBe("sly_data must be a JSON object");
    expect(chatRequests).toHaveLength(0);
    expect(await page.locator(".conversation .message").count()).toBe(0);
  });

  it("chats two turns: the thinking streams into a panel, the answer into the conversation, the chat_context goes back", async () => {
    await page.fill('textarea[name="sly_data"]', '{"user": "tester"}');
    await page.fill('textarea[name="message"]', "Welsh");
    await page.click('.chat-form button[type="submit"]');
    const answers = page.locator(".conversation .answer:not(.pending)");
    await expect.poll(() => answers.count(), { timeout: 15_000 }).toBe(1);
    expect(await answers.first().evaluate((node) => node.classList.contains("error"))).toBe(false);
    expect((await answers.first().textContent())?.length).toBeGreaterThan(0);
    const firstSteps = await page.locator(".thinking").first().locator("li.step").count();
    expect(firstSteps).toBeGreaterThan(0);
    expect(await page.locator(".thinking li.step.ai, .thinking li.step.agent").count()).toBeGreaterThan(0);

    await page.fill('textarea[name="message"]', "And in Breton?");
    await page.press('textarea[name="message"]', "Enter");
    await expect.poll(() => answers.count(), { timeout: 15_000 }).toBe(2);
    expect(await answers.nth(1).evaluate((node) => node.classList.contains("error"))).toBe(false);
    expect(await page.locator(".thinking").nth(1).locator("li.step").count()).toBeGreaterThan(0);
    await screenshot("chat-two-turns");

    expect(chatRequests).toHaveLength(2);
    expect(chatRequests[0]).toMatchObject({ agent_name: "hello_world", sly_data: { user: "tester" }, chat_filter: { chat_filter_type: "MAXIMAL" } });
    expect(chatRequests[0]!.chat_context).toBeUndefined();
    expect(chatRequests[1]!.chat_context.chat_histories.length).toBeGreaterThan(0);
  });

  it("starts a new conversation without the chat_context", async () => {
    await page.click("button.new-conversation");
    expect(await page.locator(".conversation .message").count()).toBe(0);
    await page.fill('textarea[name="message"]', "Welsh");
    await page.click('.chat-form button[type="submit"]');
    await expect.poll(() => page.locator(".conversation .answer:not(.pending)").count(), { timeout: 15_000 }).toBe(1);
    expect(chatRequests).toHaveLength(3);
    expect(chatRequests[2]!.chat_context).toBeUndefined();
  });

  it("approves an operation from the operator queue and the operations view follows its state live", async () => {
    const api = operationsApi(server.url);
    const submitted = await api.post(alice, httpOp("web-console-1"));
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;

    await openTab("operations");
    await page.fill('#operations input[name="secret"]', alice);
    await page.press('#operations input[name="secret"]', "Enter");
    const row = page.locator(`tr.operation[data-id="${id}"]`);
    await expect.poll(() => row.getAttribute("data-state")).toBe("pending");
    await row.click();
    await expect.poll(() => page.locator(".operation-detail [data-state]").textContent()).toBe("pending");

    await openTab("operator");
    await page.fill('#operator input[name="secret"]', operator);
    await page.press('#operator input[name="secret"]', "Enter");
    await expect.poll(() => page.locator("tr.request").count()).toBe(1);
    // Past the queue's one catch-up reload, only WatchEvents can bring in a request submitted now.
    await expect.poll(() => listRequestsCalls).toBe(2);
    const second = await api.post(alice, httpOp("web-console-2", "/other"));
    await expect.poll(() => page.locator("tr.request").count()).toBe(2);
    await screenshot("operator-queue");

    await page.locator(`tr.request[data-id="${submitted.body.approval_id}"] button.approve`).click();
    await expect.poll(() => page.locator(`tr.request[data-id="${submitted.body.approval_id}"]`).count()).toBe(0);
    await page.locator(`tr.request[data-id="${second.body.approval_id}"] button.deny`).click();
    await expect.poll(() => page.locator("tr.request").count()).toBe(0);

    await openTab("operations");
    await expect.poll(() => row.getAttribute("data-state"), { timeout: 15_000 }).toBe("succeeded");
    await expect.poll(() => page.locator(".operation-detail [data-state]").textContent()).toBe("succeeded");
    expect(upstream.received.map((request) => request.url)).toEqual(["/things"]);
    await screenshot("operation-succeeded");
  });

  it("raised no errors in the page", () => {
    expect(pageErrors).toEqual([]);
  });
});
