import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { finalOf, maximal, messagesOf, restChat, type Json } from "../support/chat-protocols.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { callingFirst } from "../support/tool-script.js";

const fixtures = "test/fixtures/parity";

/** An upstream for the URL fetcher: `/open/...` is allowed to it, `/open/away` redirects out of that, `/secret` is not. */
async function startUpstream() {
  const paths: string[] = [];
  const server = http.createServer((request, response) => {
    paths.push(request.url ?? "");
    if (request.url === "/open/away") response.writeHead(302, { location: "/secret" }).end();
    else if (request.url?.startsWith("/open/")) response.writeHead(200, { "content-type": "text/plain" }).end(`the page at ${request.url}`);
    else response.writeHead(200).end("the secret");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths, close: () => server.close() };
}

describe("toolbox tools", () => {
  let llm: ScriptedLlm;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let server: TestServer;
  let callFirst: { name: string; arguments?: JsonObject } | undefined;

  beforeAll(async () => {
    [llm, upstream] = await Promise.all([ScriptedLlm.start("openai"), startUpstream()]);
    server = await startTestServer({
      env: {
        ...llm.env,
        AGENT_MANIFEST_FILE: `${fixtures}/registries/toolbox_manifest.hocon`,
        AGENT_TOOL_PATH: `${fixtures}/coded_tools`,
        AGENT_TOOLBOX_INFO_FILE: `${fixtures}/registries/toolbox_info.hocon`,
        UPSTREAM_URL: upstream.url,
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await llm?.close();
    upstream?.close();
  });
  beforeEach(() => {
    llm.reset();
    upstream.paths.length = 0;
    callFirst = undefined;
    llm.script(callingFirst(() => callFirst));
  });

  const toolResult = (lines: Json[]) => messagesOf(lines).find((message) => message.type === "AGENT_TOOL_RESULT").text as string;
  const chatUsing = async (network: string, name: string, args: JsonObject = {}) => {
    callFirst = { name, arguments: args };
    const lines = await restChat(server, network, { user_message: { text: `use ${name}` }, chat_filter: maximal });
    expect(finalOf(lines).type).toBe("AGENT_FRAMEWORK");
    return lines;
  };

  it("Connectivity shows library tools as langchain_tool, coded ones as coded_tool, or as their entry says, on REST and gRPC", async () => {
    const expected = [
      { origin: "Librarian", tools: ["Counter", "Search", "Vanished"], display_as: "llm_agent" },
      { origin: "Counter", tools: [], display_as: "counter" },
      { origin: "Search", tools: [], display_as: "langchain_tool" },
      { origin: "Vanished", tools: [], display_as: "langchain_tool" },
    ];
    expect(((await (await fetch(`${server.url}/api/v1/shelf/connectivity`)).json()) as Json).connectivity_info).toEqual(expected);
    const agent = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const viaGrpc = (await agent.connectivity({ agentName: "shelf" })).connectivityInfo.map(({ origin, tools, displayAs }) => ({ origin, tools, display_as: displayAs }));
    expect(viaGrpc).toEqual(expected);
    const clock = (await agent.connectivity({ agentName: "clock" })).connectivityInfo;
    expect(clock.map((info) => [info.origin, info.displayAs])).toEqual([["Clock", "llm_agent"], ["Now", "coded_tool"]]);
  });

  // langchain_community is not installed in this machine's python3 (AXON_PYTHON's default).
  it("a library tool whose package AXON_PYTHON lacks, and a name no toolbox has, are load-time problems naming the tool, the network and the fix", () => {
    const shelf = `${projectRoot}/${fixtures}/registries/shelf.hocon`;
    expect(server.registry.problems.filter((problem) => problem.file === shelf)).toEqual([
      { file: shelf, key: "tools[3].toolbox", reason: "no_such_tool is not in the toolbox; calls of Vanished will fail", severity: "warning" },
      {
        file: shelf,
        key: "tools[2].toolbox",
        reason: expect.stringMatching(
          /^bing_search is the library tool langchain_community\.tools\.bing_search\.BingSearchResults, which runs in Python and cannot be imported there: No module named langchain_community \(Python \S+\); install its package into the interpreter AXON_PYTHON names, or set AXON_PYTHON to one that has it; calls of Search will fail$/,
        ),
        severity: "warning",
      },
    ]);
    expect(server.registry.get("shelf")).toBeDefined();
  });

  it("calling either is a clear tool error naming it, and the missing module and the interpreter or the network", async () => {
    expect(toolResult(await chatUsing("shelf", "Search"))).toMatch(
      /^Error: Search failed: ModuleNotFoundError: No module named 'langchain_community' \((Python \S+|the Python AXON_PYTHON names): install the package there, or set AXON_PYTHON to an interpreter that has it\)$/,
    );
    expect(toolResult(await chatUsing("shelf", "Vanished"))).toBe(
      "Error: Vanished failed: no_such_tool is not in the toolbox (toolbox tool no_such_tool of network shelf)",
    );
  });

  it("a coded tool entry runs the TypeScript coded tool it names, described to the LLM by the network's own toolbox file", async () => {
    const lines = await chatUsing("shelf", "Counter", { text: "one two three" });
    expect(toolResult(lines)).toBe(JSON.stringify({ words: 3 }));
    const counter = llm.requests[0]!.request.tools.find((tool) => tool.name === "Counter");
    expect(counter?.description).toBe("Counts words, for the shelf");
  });

  it("the default toolbox's get_current_date_time tells the time at a UTC offset", async () => {
    const before = Date.now();
    const told = JSON.parse(toolResult(await chatUsing("clock", "Now", { utc_offset: 2 }))) as { date_time: string; time_zone: string };
    const after = Date.now();
    expect(told.time_zone).toBe("UTC+02:00");
    expect(told.date_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+02:00$/);
    // Seconds are truncated: the instant lies within a second of the call.
    expect(Date.parse(told.date_time)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(told.date_time)).toBeLessThanOrEqual(after);
  });

  it("requests_get fetches a URL under its allowed_urls, described to the LLM by Axon's implementation", async () => {
    expect(toolResult(await chatUsing("fetcher", "Fetch", { url: `${upstream.url}/open/page` }))).toBe("the page at /open/page");
    const fetchTool = llm.requests[0]!.request.tools.find((tool) => tool.name === "Fetch");
    expect(fetchTool?.description).toMatch(/^Fetches a URL with HTTP GET/);
    expect(fetchTool?.parameters).toMatchObject({ required: ["url"] });
  });

  it("requests_get refuses any other URL, and a redirect out of the allowed ones, without fetching it", async () => {
    expect(toolResult(await chatUsing("fetcher", "Fetch", { url: `${upstream.url}/secret` }))).toBe(
      `Error: Fetch failed: ${upstream.url}/secret is not under the allowed URLs of this tool`,
    );
    expect(toolResult(await chatUsing("fetcher", "Fetch", { url: `${upstream.url}/open/../secret` }))).toBe(
      `Error: Fetch failed: ${upstream.url}/secret is not under the allowed URLs of this tool`,
    );
    expect(toolResult(await chatUsing("fetcher", "Fetch", { url: `${upstream.url}/open/away` }))).toBe(
      `Error: Fetch failed: ${upstream.url}/secret is not under the allowed URLs of this tool`,
    );
    expect(upstream.paths).toEqual(["/open/away"]);
  });
});
