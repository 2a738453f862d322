import { existsSync, mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestCa } from "../support/certificates.js";
import { alice, httpOp, operationsApi, operator, roomyAdmission, secret, startUpstream, writeFiles } from "../support/operations.js";
import { demoReply } from "../support/scripted-llm/demo-script.js";
import { refundsNetwork, scriptRefunds } from "../support/refunds-network.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";

// Debian's chromium (platform.md §5); CI installs it, a machine without it skips these tests and says why.
const chromiumPath = "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);
const screenshots = path.join(projectRoot, "test-results/screenshots");
const wide = { width: 1280, height: 900 };
const phone = { width: 390, height: 844 };

describe.skipIf(!hasChromium)(`the web console in Chromium${hasChromium ? "" : " (skipped: no /usr/bin/chromium; apt-get install -y chromium)"}`, () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  /** Page errors, and console messages of type error or warning: a clean console has none. */
  const consoleProblems: string[] = [];
  /** The Connect request bodies of every StreamingChat the page sent. */
  const chatRequests: Record<string, any>[] = [];

  const screenshot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  async function openTab(name: string) {
    await page.click(`nav [data-tab="${name}"]`);
    const shown = await page.locator("[data-panel]:visible").evaluateAll((panels) => panels.map((panel) => panel.id));
    expect(shown).toEqual([name]);
  }
  async function openNetwork(name: string) {
    await page.click(`.network[data-network="${name}"]`);
    await expect.poll(() => page.locator(".network-view:visible").getAttribute("data-network")).toBe(name);
  }
  const view = () => page.locator(".network-view:visible");
  const answers = () => view().locator(".conversation .answer:not(.pending)");
  async function send(text: string) {
    const count = await answers().count();
    await view().locator('textarea[name="message"]').fill(text);
    await view().locator('textarea[name="message"]').press("Enter");
    await expect.poll(() => answers().count(), { timeout: 15_000 }).toBe(count + 1);
    return (await answers().last().locator("p").first().textContent()) ?? "";
  }
  // Expressions run in the page (as strings: this file is type-checked without the DOM's types).
  /** No sideways scroll: the page is no wider than the window. */
  const overflowsSideways = () => page.evaluate<boolean>("document.documentElement.scrollWidth > window.innerWidth");

  beforeAll(async () => {
    // The console under test is the current source: build it where the server serves it from (dist/web).
    await build({ configFile: path.join(projectRoot, "vite.config.ts"), logLevel: "silent" });
    mkdirSync(screenshots, { recursive: true });
    [llm, upstream] = await Promise.all([ScriptedLlm.start("openai"), startUpstream()]);
    // The demo model, so that the answers on screen (and in the screenshots) are the ones a person would expect.
    llm.script(demoReply);
    server = await startTestServer({ env: { ...llm.env, ...writeFiles(upstream.url, roomyAdmission) } });
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    page = await browser.newPage({ viewport: wide });
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (error) => consoleProblems.push(`page error: ${String(error)}`));
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") consoleProblems.push(`${message.type()}: ${message.text()}`);
    });
    page.on("request", (request) => {
      // A Connect stream: one enveloped message (flags, length, then the JSON); the JSON starts at its first `{"`.
      const body = request.url().endsWith(".AgentService/StreamingChat") ? request.postDataBuffer()?.toString() : undefined;
      if (body) chatRequests.push(JSON.parse(body.slice(body.indexOf('{"'))));
    });
    await page.goto(server.url);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await llm?.close();
    upstream?.close();
  });

  it("has a favicon, at the name browsers ask for too", async () => {
    expect(await page.locator('link[rel="icon"]').getAttribute("href")).toBe("/favicon.svg");
    for (const name of ["/favicon.svg", "/favicon.ico"]) {
      const response = await fetch(server.url + name);
      expect(response.status, name).toBe(200);
      expect(response.headers.get("content-type")).toBe("image/svg+xml");
    }
  });

  it("lists the public networks with their descriptions", async () => {
    const networks = page.locator("#network-list .network");
    await expect.poll(() => networks.count()).toBe(4);
    expect(await page.locator('.network[data-network="hello_world"] .network-description').textContent()).toBe("Greets you in the language of your choice.");
  });

  it("puts the graph, the chat and the thinking side by side on a wide screen", async () => {
    await openNetwork("math_guy");
    await expect.poll(() => view().locator("svg g.node").count()).toBe(2);
    const boxes = await Promise.all([".graph-pane", ".chat-pane", ".thinking-pane"].map(async (pane) => (await view().locator(pane).boundingBox())!));
    const [graph, chat, thinking] = boxes as [NonNullable<(typeof boxes)[0]>, NonNullable<(typeof boxes)[0]>, NonNullable<(typeof boxes)[0]>];
    expect(graph.x + graph.width).toBeLessThanOrEqual(chat.x);
    expect(chat.x + chat.width).toBeLessThanOrEqual(thinking.x);
    expect(Math.abs(graph.y - chat.y)).toBeLessThan(2);
    expect(Math.abs(chat.y - thinking.y)).toBeLessThan(2);
    expect(await overflowsSideways()).toBe(false);
  });

  it("draws one shape per display_as with a legend, the front man marked, and wraps a long URL instead of cutting it", async () => {
    await openNetwork("trip_planner");
    const nodes = view().locator("svg g.node");
    await expect.poll(() => nodes.count()).toBe(4);
    const shapes = await nodes.evaluateAll((groups) => groups.map((group) => [group.getAttribute("data-kind"), group.querySelector("path.shape")!.getAttribute("d")!.replace(/[\d.]+/g, "n")]));
    const shapeOfKind = new Map<string, Set<string>>();
    for (const [kind, shape] of shapes) shapeOfKind.set(kind!, (shapeOfKind.get(kind!) ?? new Set()).add(shape!));
    // Each kind has one shape, and no two kinds share one.
    expect([...shapeOfKind.values()].every((forms) => forms.size === 1)).toBe(true);
    expect(new Set([...shapeOfKind.values()].map((forms) => [...forms][0])).size).toBe(shapeOfKind.size);
    expect(await view().locator(".legend li").evaluateAll((items) => items.map((item) => item.getAttribute("data-kind")))).toEqual(["front", "llm_agent", "external_agent"]);
    expect(await view().locator('g.node.front').getAttribute("data-name")).toBe("TripPlanner");
    const url = view().locator('g.node[data-name="http://localhost:30012/other"] text');
    expect(await url.locator("tspan").allTextContents()).toEqual(["http://localhost:", "30012/other"]);
    // The whole name is in the node's tooltip.
    expect(await view().locator('g.node[data-name="http://localhost:30012/other"] title').textContent()).toBe("http://localhost:30012/other (another network)");
    await screenshot("graph-trip_planner-1280");

    await openNetwork("music_nerd");
    await expect.poll(() => view().locator("svg path.edge.back").count()).toBeGreaterThan(0);
  });

  it("shows what a network takes: its description, parameters and sly_data schema, with a sly_data template", async () => {
    await openNetwork("trip_planner");
    await view().locator("details.function summary").click();
    const details = view().locator(".function-details");
    expect(await details.locator("p").first().textContent()).toBe("Plans a weekend trip to a city.");
    expect(await details.locator("caption").allTextContents()).toEqual(["Parameters · what to say in the message", "sly_data it reads · put these in sly_data"]);
    expect(await details.locator("table").nth(1).locator("tbody td.mono").allTextContents()).toEqual(["traveler_name"]);
    await view().getByRole("button", { name: "Fill from the schema" }).click();
    expect(JSON.parse(await view().locator('textarea[name="sly_data"]').inputValue())).toEqual({ traveler_name: "" });
  });

  it("puts a clicked sample query in the message box; Shift+Enter breaks a line and Enter sends", async () => {
    await openNetwork("math_guy");
    const samples = view().locator("button.sample");
    expect(await samples.allTextContents()).toEqual(["What is 6 times 7?", "What is 100 divided by 8?"]);
    await samples.first().click();
    const message = view().locator('textarea[name="message"]');
    expect(await message.inputValue()).toBe("What is 6 times 7?");
    await message.press("Shift+Enter");
    expect(await message.inputValue()).toBe("What is 6 times 7?\n");
    const before = chatRequests.length;
    const inputAt = (await message.boundingBox())!.y;
    await message.press("Enter");
    await expect.poll(() => answers().count(), { timeout: 15_000 }).toBe(1);
    // The message box stays where it was: the conversation scrolls above it.
    expect((await message.boundingBox())!.y).toBe(inputAt);
    expect(await answers().first().locator("p").first().textContent()).toBe("6 × 7 = 42");
    expect(chatRequests.slice(before).map((request) => request.user_message.text)).toEqual(["What is 6 times 7?"]);
    await screenshot("chat-math_guy-1280");
  });

  it("labels each thinking entry by its type's name and the agents it came from", async () => {
    const steps = view().locator(".thinking-pane li.step");
    const types = await steps.evaluateAll((items) => items.map((item) => item.getAttribute("data-type")));
    expect(new Set(types)).toEqual(new Set(["SYSTEM", "HUMAN", "AI", "AGENT", "AGENT_TOOL_RESULT", "AGENT_PROGRESS"]));
    expect(await steps.locator(".step-type").allTextContents()).toEqual(types);
    const origins = await steps.locator(".step-origin").allTextContents();
    expect(origins).toContain("MathGuy");
    expect(origins).toContain("MathGuy › Calculator");
    expect(await view().locator('.thinking-pane li.step[data-type="AGENT_TOOL_RESULT"] .step-from').first().textContent()).toBe("from MathGuy › Calculator");
  });

  it("keeps each network's conversation while another is open, and goes on with it", async () => {
    await openNetwork("hello_world");
    expect(await send("Welsh")).toBe("Shwmae! (shoo-my) That is hello in Welsh.");
    await openNetwork("math_guy");
    expect(await answers().first().locator("p").first().textContent()).toBe("6 × 7 = 42");
    expect(await send("and plus 3?")).toBe("42 + 3 = 45");
    const last = chatRequests.at(-1)!;
    expect(last.agent_name).toBe("math_guy");
    expect(JSON.stringify(last.chat_context)).toContain("What is 6 times 7?");
    // What the network returned in sly_data goes back with the next turn.
    expect(last.sly_data).toEqual({ last_result: 42 });
  });

  it("refuses sly_data that is not a JSON object before sending anything", async () => {
    await openNetwork("hello_world");
    const before = chatRequests.length;
    const sly = view().locator("details.sly-data");
    await sly.locator("summary").click();
    await sly.locator("textarea").fill("{not json");
    await view().locator('textarea[name="message"]').fill("Breton");
    await view().locator('textarea[name="message"]').press("Enter");
    await expect.poll(() => view().locator(".sly-error").textContent()).toContain("sly_data is not JSON");
    await sly.locator("textarea").fill("[1, 2]");
    await view().getByRole("button", { name: "Send" }).click();
    await expect.poll(() => view().locator(".sly-error").textContent()).toBe("sly_data must be a JSON object");
    expect(chatRequests.length).toBe(before);
    await sly.locator("textarea").fill("");
  });

  it("starts a new conversation without the chat_context", async () => {
    await view().getByRole("button", { name: "New conversation" }).click();
    expect(await view().locator(".conversation .message").count()).toBe(0);
    expect(await view().locator(".thinking-pane li.step").count()).toBe(0);
    expect(await send("Breton")).toBe("Demat! (day-mat) That is hello in Breton.");
    expect(chatRequests.at(-1)!.chat_context).toBeUndefined();
  });

  it("shows keyboard focus, and moves between tabs with the arrow keys", async () => {
    await page.locator('nav [data-tab="networks"]').focus();
    await page.keyboard.press("ArrowRight");
    expect(await page.evaluate<string>('document.activeElement.getAttribute("data-tab")')).toBe("operations");
    const outline = await page.evaluate<string>("getComputedStyle(document.activeElement).outlineStyle");
    expect(outline).not.toBe("none");
    await page.keyboard.press("ArrowLeft");
    expect(await page.locator("[data-panel]:visible").getAttribute("id")).toBe("networks");
  });

  it("stacks graph, chat and thinking on a phone, with no sideways scroll", async () => {
    for (const size of [phone, { width: 360, height: 740 }]) {
      await page.setViewportSize(size);
      await openNetwork("trip_planner");
      const tops = await Promise.all([".graph-pane", ".chat-pane", ".thinking-pane"].map(async (pane) => (await view().locator(pane).boundingBox())!.y));
      expect(tops[0]!).toBeLessThan(tops[1]!);
      expect(tops[1]!).toBeLessThan(tops[2]!);
      expect(await overflowsSideways()).toBe(false);
    }
    await page.setViewportSize(phone);
    await openNetwork("math_guy");
    await screenshot("chat-math_guy-390");
    await page.setViewportSize(wide);
  });

  /**
   * A wrong secret, on a page of its own: the browser logs the server's 401 as a failed load, which is the only
   * thing that page may write to its console.
   */
  async function wrongSecret(tab: "operations" | "operator", label: string) {
    const probe = await browser.newPage({ viewport: wide });
    const problems: string[] = [];
    probe.on("console", (message) => void (message.type() === "error" || message.type() === "warning" ? problems.push(message.text()) : undefined));
    probe.on("pageerror", (error) => problems.push(String(error)));
    await probe.goto(server.url);
    await probe.click(`nav [data-tab="${tab}"]`);
    await probe.fill(`#${tab} input[name="secret"]`, secret());
    await probe.press(`#${tab} input[name="secret"]`, "Enter");
    await expect.poll(() => probe.locator(`#${tab} .secret-problem`).textContent()).toBe(`That ${label} was not accepted. Enter it again.`);
    // Asked again: the field is back, empty and focused.
    expect(await probe.evaluate<string>("document.activeElement.name")).toBe("secret");
    expect(await probe.locator(`#${tab} input[name="secret"]`).inputValue()).toBe("");
    await probe.close();
    expect(problems.length).toBeGreaterThan(0);
    for (const problem of problems) expect(problem).toBe("Failed to load resource: the server responded with a status of 401 (Unauthorized)");
  }

  it("shows new operations as they are submitted, without a reload, after asking again for a wrong client secret", async () => {
    await wrongSecret("operations", "client secret");
    await openTab("operations");
    await page.fill('#operations input[name="secret"]', alice);
    await page.press('#operations input[name="secret"]', "Enter");
    await expect.poll(() => page.locator("#operations .status").textContent()).toContain("No operations yet");

    const api = operationsApi(server.url);
    // Until the page's watch is open, a submission may come before it: submit until one shows, then one more.
    let attempt = 0;
    await expect
      .poll(async () => {
        await api.post(alice, httpOp(`web-warmup-${attempt++}`, "/warmup"));
        return page.locator("tr.operation").count();
      })
      .toBeGreaterThan(0);
    const submitted = await api.post(alice, httpOp("web-console-1"));
    const row = page.locator(`tr.operation[data-id="${submitted.body.id}"]`);
    await expect.poll(() => row.getAttribute("data-state")).toBe("pending");
    expect(await row.locator(".state").textContent()).toBe("waiting for approval");
    await row.click();
    await expect.poll(() => page.locator(".operation-detail [data-state]").textContent()).toBe("waiting for approval");
    await screenshot("operations-1280");
  });

  it("asks the operator again after a wrong secret, shows what an operation will call, and confirms each decision", async () => {
    await wrongSecret("operator", "operator secret");
    await openTab("operator");
    await page.fill('#operator input[name="secret"]', operator);
    await page.press('#operator input[name="secret"]', "Enter");

    const api = operationsApi(server.url);
    const operation = (await api.get(alice, (await api.post(alice, httpOp("web-console-1"))).body.id)).body;
    const card = page.locator(`.request-card[data-id="${operation.approval_id}"]`);
    await expect.poll(() => card.count()).toBe(1);
    expect(await card.locator("h3").textContent()).toContain("HTTP GET upstream /things");
    expect(await card.locator(".will-call .summary").textContent()).toBe(`GET ${upstream.url}/things with credential upstream`);
    expect(await card.locator(".state").first().textContent()).toBe("waiting for your decision");
    await screenshot("operator-1280");

    await card.getByRole("button", { name: "Approve…" }).click();
    const confirmation = card.locator(".confirm");
    expect(await confirmation.textContent()).toContain(`It will call GET ${upstream.url}/things with credential upstream.`);
    // Nothing is decided before the confirmation.
    const undecided = (await (await api.call("GET", `/api/operator/v1/requests/${operation.approval_id}`, operator)).json()) as { status: string };
    expect(undecided.status).toBe("pending");
    await page.setViewportSize(phone);
    expect(await overflowsSideways()).toBe(false);
    await screenshot("operator-390");
    await page.setViewportSize(wide);
    await card.getByRole("button", { name: "Confirm: approve" }).click();
    await expect.poll(() => page.locator("#operator .status").textContent()).toBe("Approved: HTTP GET upstream /things. It runs now.");
    await expect.poll(() => card.count()).toBe(0);

    // The warm-up requests of the operations test: deny one, after cancelling a first try with Escape.
    const next = page.locator(".request-card").first();
    await next.getByRole("button", { name: "Deny…" }).click();
    // Pressed in the confirmation's reason field, wherever the focus went meanwhile (the list re-renders on events).
    await next.locator(".confirm input[name=reason]").press("Escape");
    await expect.poll(() => next.locator(".confirm").count()).toBe(0);
    const denied = page.locator(`.request-card[data-id="${await next.getAttribute("data-id")}"]`);
    await denied.getByRole("button", { name: "Deny…" }).click();
    // A request that arrives while the operator types the reason re-renders the list; the typing goes on in the field.
    const reason = denied.locator(".confirm input[name=reason]");
    await reason.pressSequentially("not ");
    const arriving = (await api.post(alice, httpOp("web-console-arriving"))).body.id as string;
    const arrived = (await api.get(alice, arriving)).body.approval_id as string;
    await expect.poll(() => page.locator(`.request-card[data-id="${arrived}"]`).count()).toBe(1);
    await page.keyboard.type("now");
    expect(await reason.inputValue()).toBe("not now");
    await denied.getByRole("button", { name: "Confirm: deny" }).click();
    await expect.poll(() => denied.count()).toBe(0);

    await openTab("operations");
    const row = page.locator(`tr.operation[data-id="${operation.id}"]`);
    await expect.poll(() => row.getAttribute("data-state"), { timeout: 15_000 }).toBe("succeeded");
    expect(upstream.received.map((request) => request.url)).toEqual(["/things"]);
    await screenshot("operations-succeeded-1280");
    await page.setViewportSize(phone);
    expect(await overflowsSideways()).toBe(false);
    await screenshot("operations-390");
    await page.setViewportSize(wide);
  });

  it("shows what a held tool call asks for, and lets the operator change its arguments before it runs", async () => {
    const refundsLlm = await ScriptedLlm.start("openai");
    scriptRefunds(refundsLlm);
    const refunds = await startTestServer({ env: { ...refundsLlm.env, ...refundsNetwork, ...writeFiles("http://127.0.0.1:9", roomyAdmission) } });
    try {
      await page.goto(refunds.url);
      await openTab("operator");
      await page.fill('#operator input[name="secret"]', operator);
      await page.press('#operator input[name="secret"]', "Enter");
      const chatting = fetch(`${refunds.url}/api/v1/refunds/streaming_chat`, { method: "POST", body: JSON.stringify({ user_message: { text: "refund 90" } }) }).then((response) => response.text());

      const card = page.locator(".request-card").first();
      await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(1);
      await card.locator(".asks-for summary").click();
      expect(JSON.parse((await card.locator(".asks-for pre").textContent()) ?? "{}")).toMatchObject({ arguments: { customer: "Ada", amount: 90 }, allowed_decisions: ["approve", "edit", "reject"] });
      await card.getByRole("button", { name: "Approve…" }).click();
      const edited = card.locator(".confirm textarea[name=arguments]");
      expect(JSON.parse(await edited.inputValue())).toEqual({ customer: "Ada", amount: 90 });
      // Not JSON: refused on the page, nothing decided.
      await edited.fill("{ amount: 5");
      await card.getByRole("button", { name: "Confirm: approve" }).click();
      await expect.poll(() => page.locator("#operator .status").textContent()).toContain("the arguments must be a JSON object");
      await edited.fill(JSON.stringify({ customer: "Ada", amount: 5 }));
      await screenshot("operator-edit-1280");
      await card.getByRole("button", { name: "Confirm: approve" }).click();
      expect(await chatting).toContain("Done: refunded 5 to Ada");
    } finally {
      // Off the refunds server before it stops, so that the page's streams never try a closed port.
      await page.goto(server.url);
      await refunds.close();
      await refundsLlm.close();
    }
  });

  it("shows which operations were recovered by replay: on the agent and operator APIs and on the console", async () => {
    const api = operationsApi(server.url);
    const operation = (await api.get(alice, (await api.post(alice, httpOp("web-console-recovered", "/recovered"))).body.id)).body;
    await api.approve(operation.id);
    expect((await api.waitTerminal(alice, operation.id)).state).toBe("succeeded");
    expect((await api.get(alice, operation.id)).body.recovered_by).toBeUndefined();
    // As the reconciler writes an outcome it recovered by replaying the request after its replica stopped.
    await server.operations.database.prisma.operation.update({ where: { id: operation.id }, data: { recoveredBy: "replay" } });

    expect((await api.get(alice, operation.id)).body.recovered_by).toBe("replay");
    const request = await api.json(await api.call("GET", `/api/operator/v1/requests/${operation.approval_id}`, operator));
    expect(request.body.linked_operation.recovered_by).toBe("replay");

    await openTab("operations");
    await page.locator("#operations").getByRole("button", { name: "Reload" }).click();
    const row = page.locator(`tr.operation[data-id="${operation.id}"]`);
    await expect.poll(() => row.locator(".recovered").textContent()).toBe("recovered by replay");
    expect(await row.locator(".recovered").getAttribute("title")).toContain("sent again with the same idempotency key");
  });

  it("wrote no errors or warnings to the console of the page used throughout", () => {
    expect(consoleProblems).toEqual([]);
  });
});

// After the suite above (same file, so the same build of the console): the console over https, and framed by a stranger.
describe.skipIf(!hasChromium)("the web console over https, under its Content-Security-Policy", () => {
  const ca = TestCa.create("console-ca");
  const certificate = ca.issue("console", "localhost", ["DNS:localhost", "IP:127.0.0.1"]);
  let server: TestServer;
  let stranger: http.Server;
  let browser: Browser;
  const consoleProblems: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({
      env: { ...writeFiles("http://127.0.0.1:9", roomyAdmission), AXON_TLS_CERT_FILE: certificate.certFile, AXON_TLS_KEY_FILE: certificate.keyFile },
    });
    // Another origin whose page frames the console, as a clickjacking page would.
    stranger = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><iframe id="framed" src="https://127.0.0.1:${server.port}/" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => stranger.listen(0, "127.0.0.1", resolve));
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      // The test CA is not in Chromium's store.
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    stranger?.close();
    await server?.close();
  });

  it("loads from https and lists the networks with no policy violation", async () => {
    const page = await browser.newPage({ viewport: wide });
    page.on("pageerror", (error) => consoleProblems.push(`page error: ${String(error)}`));
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") consoleProblems.push(`${message.type()}: ${message.text()}`);
    });
    const response = await page.goto(`https://127.0.0.1:${server.port}/`);
    expect(response?.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    await expect.poll(() => page.locator("#network-list .network").count(), { timeout: 15_000 }).toBe(4);
    await page.close();
    expect(consoleProblems).toEqual([]);
  });

  it("refuses to be framed by a page of another origin", async () => {
    const page = await browser.newPage({ viewport: wide });
    const messages: string[] = [];
    page.on("console", (message) => messages.push(message.text()));
    await page.goto(`http://127.0.0.1:${(stranger.address() as AddressInfo).port}/`);
    await expect.poll(() => messages.some((text) => text.includes("frame-ancestors")), { timeout: 10_000 }).toBe(true);
    const framed = page.frames().find((frame) => frame.url().includes(String(server.port)));
    const listed = framed ? await framed.locator("#network-list").count().catch(() => 0) : 0;
    expect(listed).toBe(0);
    await page.close();
  });
});
