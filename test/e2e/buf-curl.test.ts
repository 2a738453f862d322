import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { expectedAgents, expectedGreeterFunction, expectedRelayConnectivity, fixtureEnv } from "./expectations.js";

const run = promisify(execFile);
const buf = path.join(projectRoot, "node_modules/.bin/buf");

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: fixtureEnv, chats: new ScriptedChats() });
});
afterAll(() => server.close());

/** `buf curl` with no proto files: it learns every type through server reflection. */
async function bufCurl(protocol: "grpc" | "connect" | "grpcweb", method: string, body: object) {
  const args = ["curl", "--protocol", protocol, "-d", JSON.stringify(body), `${server.url}/${method}`];
  if (protocol === "grpc") args.splice(1, 0, "--http2-prior-knowledge");
  try {
    const { stdout } = await run(buf, args, { cwd: projectRoot });
    return { ok: true, messages: stdout.trim() === "" ? [] : parseConcatenatedJson(stdout) };
  } catch (error) {
    const { stderr } = error as { stderr: string };
    return { ok: false, messages: parseConcatenatedJson(stderr) };
  }
}

// buf curl prints one pretty-printed JSON object per message.
function parseConcatenatedJson(text: string): any[] {
  return text
    .trim()
    .split(/\n(?=\{)/)
    .map((chunk) => JSON.parse(chunk));
}

const agentService = "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService";

describe.each(["grpc", "connect", "grpcweb"] as const)("buf curl over %s via reflection", (protocol) => {
  it("calls List, Function and Connectivity", async () => {
    const list = await bufCurl(protocol, "dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List", {});
    expect(list.messages).toEqual([{ agents: expectedAgents }]);
    const fn = await bufCurl(protocol, `${agentService}/Function`, { agent_name: "greeter" });
    expect(fn.messages[0].function).toEqual(expectedGreeterFunction);
    const connectivity = await bufCurl(protocol, `${agentService}/Connectivity`, { agent_name: "relay" });
    expect(connectivity.messages[0].connectivity_info.map((info: { origin: string }) => info.origin)).toEqual(
      expectedRelayConnectivity.map((info) => info.origin),
    );
  });

  it("streams a chat", async () => {
    const chat = await bufCurl(protocol, `${agentService}/StreamingChat`, {
      agent_name: "greeter",
      user_message: { text: "hi" },
      chat_filter: { chat_filter_type: "MAXIMAL" },
    });
    expect(chat.ok).toBe(true);
    expect(chat.messages.map((message) => message.response.type)).toEqual(["AGENT", "AI", "AGENT_FRAMEWORK"]);
  });

  it("shows NOT_FOUND with its ErrorInfo for an unknown agent", async () => {
    const result = await bufCurl(protocol, `${agentService}/Function`, { agent_name: "nobody" });
    expect(result.ok).toBe(false);
    const [error] = result.messages;
    expect(error.code).toBe("not_found");
    const detail = error.details.find((d: { type: string }) => d.type === "google.rpc.ErrorInfo");
    expect(fromBinary(ErrorInfoSchema, Buffer.from(detail.value, "base64"))).toMatchObject({
      reason: "AGENT_NOT_FOUND",
      metadata: { agent_name: "nobody" },
    });
  });
});
