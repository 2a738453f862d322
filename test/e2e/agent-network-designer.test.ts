import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { finalOf, maximal, messagesOf, protocols, restChat, type Json } from "../support/chat-protocols.js";
import { defaultReply, ScriptedLlm, type Reply, type ScriptHandler } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../support/server.js";
import { UUID } from "../support/temporary-networks.js";
import { until } from "../support/wait.js";

const fixtures = path.join(projectRoot, "test/fixtures/designer");
// The designer's middleware subclasses LangChain's AgentMiddleware; this machine's python3 has a package shaped like it.
const langchainShaped = path.join(projectRoot, "test/fixtures/middleware/python");

const call = (name: string, args: JsonObject): Reply => ({ toolCalls: [{ name, arguments: args }] });

/**
 * The designer family's models, as they would work: the designer has the editor build the structure and answers; its
 * middleware sends it back for the missing instructions, which it has the instructions editor write; it answers again.
 * The editors call their coded tools in order. Any other network (the one designed) answers as `defaultReply` does.
 */
const designerFamily: ScriptHandler = (request) => {
  const last = request.messages.at(-1)!;
  const system = request.system ?? "";
  if (system.startsWith("Design agent networks")) {
    if (last.role === "tool") return { text: "The lighthouse network is designed." };
    if (last.content.includes("instructions-related issues")) return call("agent_network_instructions_editor", { inquiry: "Write the instructions of keeper and lamp." });
    return call("agent_network_editor", { agent_network_description: "A lighthouse: its keeper and its lamp.", mode: "create" });
  }
  if (system === "Edit the structure of the agent network.") {
    if (last.role === "user") return call("create_new_network", { agent_network_name: "lighthouse", agent_names: ["keeper", "lamp"], is_tool_list: [false, false] });
    if (last.content.startsWith("Created")) return call("update_agent_in_network", { agent_name: "keeper", new_down_chains: ["lamp"] });
    return { text: "The structure is built." };
  }
  if (system === "Write the instructions of each agent of the network.") {
    if (last.role === "user") return call("set_agent_instructions", { agent_name: "keeper", instructions: "Keep the lighthouse: ask the lamp how it shines.", description: "Keeps the lighthouse." });
    if (last.content === "Wrote the instructions of keeper.") return call("set_agent_instructions", { agent_name: "lamp", instructions: "Say how the lamp shines.", description: "The lamp." });
    return { text: "The instructions are written." };
  }
  return defaultReply(request);
};

const designedDefinition = {
  keeper: { instructions: "Keep the lighthouse: ask the lamp how it shines.", description: "Keeps the lighthouse.", tools: ["lamp"] },
  lamp: { instructions: "Say how the lamp shines.", description: "The lamp." },
};

/** A copy of the designer's checkout served by the built server with hot reload on, in the persistence mode `env` picks. */
class DesignerCheckout {
  private constructor(
    readonly root: string,
    readonly llm: ScriptedLlm,
    readonly axon: AxonProcess,
  ) {}

  static async start(env: Record<string, string>): Promise<DesignerCheckout> {
    const root = mkdtempSync(path.join(os.tmpdir(), "axon-designer-"));
    cpSync(fixtures, root, { recursive: true });
    const llm = await ScriptedLlm.start("openai");
    llm.script(designerFamily);
    const axon = await startAxonProcess({
      ...llm.env,
      ...env,
      AGENT_MANIFEST_FILE: path.join(root, "registries/manifest.hocon"),
      AGENT_TOOL_PATH: path.join(root, "coded_tools"),
      AGENT_MANIFEST_UPDATE_PERIOD_SECONDS: "1",
      PYTHONPATH: langchainShaped,
      AXON_PYTHON_WORKERS: "1",
    });
    return new DesignerCheckout(root, llm, axon);
  }

  design(): Promise<Json[]> {
    return restChat(this.axon, "agent_network_designer", { user_message: { text: "Create a network for a lighthouse." }, chat_filter: maximal });
  }

  /** What the designer's own model was sent, call by call. */
  designerRequests() {
    return this.llm.requests.map(({ request }) => request).filter((request) => request.system?.startsWith("Design agent networks"));
  }

  async close(): Promise<void> {
    await this.axon?.stop();
    await this.llm?.close();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** What both modes share: the run the middleware sent back, the definition in the prompts, the progress the client saw. */
function expectTheDesignersRun(checkout: DesignerCheckout, lines: Json[]): void {
  const [first, second, third, fourth, ...more] = checkout.designerRequests();
  expect(more).toEqual([]);
  // The definition middleware puts what the editors built into each model call once there is one.
  expect(first!.system).toBe("Design agent networks: have agent_network_editor build the structure, agent_network_instructions_editor write the instructions.");
  expect(second!.system).toContain('## Current Agent Network Definition\n\n{\n  "keeper": {\n    "description": "",\n    "instructions": "",');
  // The persistence middleware's after_agent found the instructions missing and sent the run back with what to fix.
  expect(third!.messages.at(-1)).toEqual({
    role: "user",
    content:
      "The agent network definition has instructions-related issues: ['keeper has no instructions', 'lamp has no instructions']. Call `agent_network_instructions_editor` to fix them.",
  });
  expect(fourth!.system).toContain('"instructions": "Keep the lighthouse: ask the lamp how it shines."');
  // The editors' coded tools (their messages let through by from_downstream) and the definition middleware, before each
  // model call that has a definition to show, report the definition as it grows.
  const reported = messagesOf(lines).filter((message) => message.type === "AGENT_PROGRESS" && message.structure?.agent_network_name === "lighthouse");
  expect(reported.map((message) => message.origin.map((step: Json) => step.tool).join("."))).toEqual([
    "network_editor.create_new_network",
    "network_editor.update_agent_in_network",
    "agent_network_designer",
    "agent_network_designer",
    "instructions_editor.set_agent_instructions",
    "instructions_editor.set_agent_instructions",
    "agent_network_designer",
  ]);
  expect(reported.at(-1)!.structure.agent_network_definition).toEqual(designedDefinition);
}

/** The designed network answers as the designer wrote it: its keeper asks its lamp. */
function expectTheDesignedNetwork(checkout: DesignerCheckout, lines: Json[]): void {
  expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: "Answer: Answer: The inquiry is Is the lamp lit?." });
  const systems = checkout.llm.requests.map(({ request }) => request.system);
  expect(systems).toContain("You are part of the lighthouse network.\nKeep the lighthouse: ask the lamp how it shines.");
  expect(systems).toContain("You are part of the lighthouse network.\nSay how the lamp shines.");
}

describe("the Agent Network Designer family, persisting to registry files the server hot-reloads", () => {
  let checkout: DesignerCheckout;
  beforeAll(async () => {
    checkout = await DesignerCheckout.start({});
  });
  afterAll(() => checkout?.close());

  it("designs a network with its editors, writes it and its manifest entry once its middleware has checked it, and the server serves it by name", async () => {
    const lines = await checkout.design();
    const final = finalOf(lines);
    expect(final.text).toBe("The lighthouse network is designed.");
    expectTheDesignersRun(checkout, lines);

    const generated = path.join(checkout.root, "registries/generated");
    const written = readFileSync(path.join(generated, "lighthouse.hocon"), "utf8");
    expect(final.sly_data).toEqual({ agent_network_name: "lighthouse", agent_network_definition: designedDefinition, agent_network_hocon_text: written });
    expect(written).toContain('instructions: """You are part of the lighthouse network.\nKeep the lighthouse: ask the lamp how it shines."""');
    expect(readFileSync(path.join(generated, "manifest.hocon"), "utf8")).toContain('"generated/lighthouse.hocon": true');

    // The manifest the server watches includes the designer's: the next reload serves the new network.
    await until(async () => {
      const listed = (await (await fetch(`${checkout.axon.url}/api/v1/list`)).json()) as { agents: { agent_name: string }[] };
      return listed.agents.some((agent) => agent.agent_name === "generated/lighthouse");
    }, "generated/lighthouse is served");
    checkout.llm.reset();
    checkout.llm.script(designerFamily);
    expectTheDesignedNetwork(checkout, await restChat(checkout.axon, "generated/lighthouse", { user_message: { text: "Is the lamp lit?" } }));
  });
});

describe("the Agent Network Designer family, persisting as reservations (AGENT_NETWORK_DESIGNER_USE_RESERVATIONS)", () => {
  let checkout: DesignerCheckout;
  let reservation: Json;
  beforeAll(async () => {
    checkout = await DesignerCheckout.start({ AGENT_NETWORK_DESIGNER_USE_RESERVATIONS: "true", AGENT_NETWORK_DESIGNER_RESERVATIONS_LIFETIME_IN_SECONDS: "600" });
  });
  afterAll(() => checkout?.close());
  beforeEach(() => {
    checkout.llm.reset();
    checkout.llm.script(designerFamily);
  });

  it("reserves the network through its middleware's reservationist and says so in sly_data's agent_reservations, writing no file", async () => {
    const before = Date.now();
    const lines = await checkout.design();
    const after = Date.now();
    const final = finalOf(lines);
    expect(final.text).toBe("The lighthouse network is designed.");
    expectTheDesignersRun(checkout, lines);

    const { agent_reservations: reservations, ...rest } = final.sly_data;
    expect(rest).toEqual({ agent_network_name: "lighthouse", agent_network_definition: designedDefinition, agent_network_hocon_text: expect.stringContaining('name: "keeper"') });
    expect(reservations).toEqual([{ reservation_id: expect.stringMatching(new RegExp(`^lighthouse-${UUID}$`)), lifetime_in_seconds: 600, expiration_time_in_seconds: expect.any(Number) }]);
    reservation = reservations[0];
    // Granted for the lifetime asked, from the moment it was deployed.
    expect(reservation.expiration_time_in_seconds * 1000).toBeGreaterThanOrEqual(before + 600_000);
    expect(reservation.expiration_time_in_seconds * 1000).toBeLessThanOrEqual(after + 600_000);
    expect(existsSync(path.join(checkout.root, "registries/generated"))).toBe(false);
    // Reserved by a network's middleware: served, not listed.
    const listed = (await (await fetch(`${checkout.axon.url}/api/v1/list`)).json()) as { agents: { agent_name: string }[] };
    expect(listed.agents.map((agent) => agent.agent_name)).not.toContain(reservation.reservation_id);
  });

  it.each(protocols.filter(([name]) => name !== "Connect"))("the reserved network answers by its reservation id over %s", async (_name, chat) => {
    expect(reservation, "the network was reserved").toBeDefined();
    expectTheDesignedNetwork(checkout, await chat(checkout.axon, reservation.reservation_id, { user_message: { text: "Is the lamp lit?" } }));
  });
});
