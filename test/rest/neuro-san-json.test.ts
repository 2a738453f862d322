import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeService } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { withNeuroSanFields } from "../../src/server/rest/neuro-san-json.js";
import { NetworkFolder } from "../agents/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

const [functionMethod, connectivityMethod, streamingChatMethod] = ["function", "connectivity", "streamingChat"].map(
  (name) => AgentService.method[name as keyof typeof AgentService.method],
);
const listMethod = ConciergeService.method.list;

describe("the fields neuro-san's HTTP server always sends", () => {
  it("a Function answer without a function block is {function: {}}", () => {
    expect(withNeuroSanFields(functionMethod!, {})).toEqual({ function: {} });
    expect(withNeuroSanFields(functionMethod!, { function: { description: "d" } })).toEqual({ function: { description: "d" } });
  });

  it("every Connectivity entry carries its tools, an empty list for a leaf", () => {
    const json: JsonObject = { connectivity_info: [{ origin: "Front", tools: ["Leaf"], display_as: "llm_agent" }, { origin: "Leaf", display_as: "coded_tool" }] };
    expect(withNeuroSanFields(connectivityMethod!, json)).toEqual({
      connectivity_info: [
        { origin: "Front", tools: ["Leaf"], display_as: "llm_agent" },
        { origin: "Leaf", tools: [], display_as: "coded_tool" },
      ],
    });
  });

  it("every List entry carries a description and tags, empty when the network has no metadata", () => {
    expect(withNeuroSanFields(listMethod, { agents: [{ agent_name: "bare" }, { agent_name: "full", description: "d", tags: ["t"] }] })).toEqual({
      agents: [
        { agent_name: "bare", description: "", tags: [] },
        { agent_name: "full", description: "d", tags: ["t"] },
      ],
    });
    expect(withNeuroSanFields(listMethod, {})).toEqual({ agents: [] });
  });

  it("leaves every other answer as proto3 JSON has it", () => {
    const line = { response: { type: "AI", text: "hi" } };
    expect(withNeuroSanFields(streamingChatMethod!, line)).toBe(line);
  });
});

describe("REST answers keep them, gRPC stays proto3", () => {
  let folder: NetworkFolder;
  let server: TestServer;
  beforeAll(async () => {
    folder = await NetworkFolder.create({
      "registries/manifest.hocon": `"bare.hocon": true`,
      "registries/bare.hocon": `tools: [
        { name: "Front", instructions: "Answer.", tools: ["Leaf"] }
        { name: "Leaf", class: "leaf.Leaf" }
      ]`,
    });
    server = await startTestServer({ env: { AGENT_MANIFEST_FILE: folder.path("registries/manifest.hocon") } });
  });
  afterAll(async () => {
    await server.close();
    await folder.remove();
  });

  const get = async (path: string) => (await fetch(`${server.url}/api/v1/${path}`)).json();

  it("over REST: List, Connectivity and Function of a network with no metadata and no function block", async () => {
    expect(await get("list")).toEqual({ agents: [{ agent_name: "bare", description: "", tags: [] }] });
    expect(await get("bare/connectivity")).toEqual({
      connectivity_info: [
        { origin: "Front", tools: ["Leaf"], display_as: "llm_agent" },
        { origin: "Leaf", tools: [], display_as: "coded_tool" },
      ],
    });
    expect(await get("bare/function")).toEqual({ function: {} });
  });

  it("over gRPC the Function answer stays proto3: no empty function message is sent", async () => {
    const agent = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    expect((await agent.function({ agentName: "bare" })).function).toBeUndefined();
  });
});
