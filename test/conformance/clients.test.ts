import { execFile } from "node:child_process";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../src/gen/google/rpc/status_pb.js";
import { AgentService, ChatRequestSchema, FunctionRequestSchema } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ConciergeResponseSchema } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { fixtureEnv } from "../e2e/expectations.js";

// The same cases through the clients people use: connect-node's Connect, gRPC and gRPC-Web transports, grpc-js, and
// Python's grpcio (Debian's, at /usr/bin/python3). Each must read the same code, details and metadata.
const list = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";
const agentPath = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService";
const thirtyDaysMs = 30 * 24 * 3_600_000;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: fixtureEnv, chats: new ScriptedChats() });
});
afterAll(() => server.close());

const transports: Record<string, (baseUrl: string) => Transport> = {
  "connect-node Connect JSON over HTTP/1.1": (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  "connect-node Connect binary over HTTP/2": (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
  "connect-node gRPC over HTTP/2": (baseUrl) => createGrpcTransport({ baseUrl }),
  "connect-node gRPC JSON over HTTP/2": (baseUrl) => createGrpcTransport({ baseUrl, useBinaryFormat: false }),
  "connect-node gRPC-Web over HTTP/1.1": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  "connect-node gRPC-Web over HTTP/2": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "2" }),
};

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  return ConnectError.from(error);
}

describe.each(Object.entries(transports))("%s", (_name, makeTransport) => {
  const agents = () => createClient(AgentService, makeTransport(server.url));

  it("reads an error's code and its ErrorInfo", async () => {
    const error = await failure(agents().function({ agentName: "nobody" }));
    expect(error.code).toBe(Code.NotFound);
    expect(error.findDetails(ErrorInfoSchema)[0]?.reason).toBe("AGENT_NOT_FOUND");
  });

  it("sees DEADLINE_EXCEEDED when a stream outlives its deadline", async () => {
    const error = await failure(
      (async () => {
        for await (const _ of agents().streamingChat({ agentName: "greeter", userMessage: { text: "hang" } }, { timeoutMs: 300 })) void _;
      })(),
    );
    expect(error.code).toBe(Code.DeadlineExceeded);
  });

  it("sends binary metadata and reads the request id header", async () => {
    let requestId: string | null = null;
    await agents().function(
      { agentName: "greeter" },
      { headers: { "x-trace-bin": "AAEC", "x-request-id": "conformance-client" }, onHeader: (headers) => (requestId = headers.get("x-request-id")) },
    );
    expect(requestId).toBe("conformance-client");
  });
});

describe("grpc-js", () => {
  let client: grpc.Client;
  beforeAll(() => {
    client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  });
  afterAll(() => client.close());
  const identity = (bytes: Buffer) => bytes;

  function unary(path: string, request: Uint8Array, options: { deadline?: Date; metadata?: grpc.Metadata } = {}) {
    return new Promise<{ error: grpc.ServiceError | null; response?: Buffer }>((resolve) => {
      client.makeUnaryRequest(path, identity, identity, Buffer.from(request), options.metadata ?? new grpc.Metadata(), { deadline: options.deadline ?? Infinity }, (error, response) =>
        resolve({ error, ...(response ? { response } : {}) }),
      );
    });
  }

  it("an unknown method is UNIMPLEMENTED", async () => {
    const { error } = await unary("/no.such.Service/Method", new Uint8Array());
    expect(error?.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("an error's details travel in grpc-status-details-bin", async () => {
    const { error } = await unary(`${agentPath}/Function`, toBinary(FunctionRequestSchema, create(FunctionRequestSchema, { agentName: "nobody" })));
    expect(error?.code).toBe(grpc.status.NOT_FOUND);
    const status = fromBinary(StatusSchema, error!.metadata.get("grpc-status-details-bin")[0] as Buffer);
    expect(fromBinary(ErrorInfoSchema, status.details[0]!.value).reason).toBe("AGENT_NOT_FOUND");
  });

  it("a deadline 30 days away is honoured", async () => {
    const { error, response } = await unary(list, new Uint8Array(), { deadline: new Date(Date.now() + thirtyDaysMs) });
    expect(error).toBeNull();
    expect(fromBinary(ConciergeResponseSchema, response!).agents.length).toBeGreaterThan(0);
  });

  it("binary metadata is accepted", async () => {
    const metadata = new grpc.Metadata();
    metadata.set("x-trace-bin", Buffer.from([0, 1, 2, 255]));
    expect((await unary(list, new Uint8Array(), { metadata })).error).toBeNull();
  });

  it("a server stream past its deadline is DEADLINE_EXCEEDED", async () => {
    const request = toBinary(ChatRequestSchema, create(ChatRequestSchema, { agentName: "greeter", userMessage: { text: "hang" } }));
    const code = await new Promise<number>((resolve) => {
      const call = client.makeServerStreamRequest(`${agentPath}/StreamingChat`, identity, identity, Buffer.from(request), new grpc.Metadata(), { deadline: Date.now() + 300 });
      call.on("data", () => {});
      call.on("error", (error: grpc.ServiceError) => resolve(error.code));
      call.on("end", () => resolve(grpc.status.OK));
    });
    expect(code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });
});

// One Python process runs every case and prints what grpcio saw, one JSON object per case.
const pythonCases = String.raw`
import base64, json, sys, grpc
target, chat_hang = sys.argv[1], bytes.fromhex(sys.argv[2])
channel = grpc.insecure_channel(target)
def call(name, path, request, timeout=None, stream=False, metadata=None):
    method = (channel.unary_stream if stream else channel.unary_unary)(path)
    try:
        answer = method(request, timeout=timeout, metadata=metadata)
        if stream:
            answer = list(answer)
        result = {"code": "OK"}
    except grpc.RpcError as error:
        details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
        result = {"code": error.code().name, "details": base64.b64encode(details).decode() if details else None}
    print(json.dumps({"case": name, **result}))
call("list", "${list}", b"")
call("unknown", "/no.such.Service/Method", b"")
call("long-deadline", "${list}", b"", timeout=30 * 86400)
call("binary-metadata", "${list}", b"", metadata=(("x-trace-bin", b"\x00\x01\xff"),))
call("not-found", "${agentPath}/Function", bytes.fromhex(sys.argv[3]))
call("stream-deadline", "${agentPath}/StreamingChat", chat_hang, timeout=0.3, stream=True)
`;

describe("Python grpcio", () => {
  let results: Record<string, { code: string; details?: string | null }>;
  beforeAll(async () => {
    const hang = Buffer.from(toBinary(ChatRequestSchema, create(ChatRequestSchema, { agentName: "greeter", userMessage: { text: "hang" } }))).toString("hex");
    const nobody = Buffer.from(toBinary(FunctionRequestSchema, create(FunctionRequestSchema, { agentName: "nobody" }))).toString("hex");
    const { stdout } = await promisify(execFile)("/usr/bin/python3", ["-c", pythonCases, `127.0.0.1:${server.port}`, hang, nobody]);
    results = Object.fromEntries(
      stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { case: string; code: string })
        .map((entry) => [entry.case, entry]),
    );
  });

  it.each([
    ["list", "OK"],
    ["unknown", "UNIMPLEMENTED"],
    ["long-deadline", "OK"],
    ["binary-metadata", "OK"],
    ["not-found", "NOT_FOUND"],
    ["stream-deadline", "DEADLINE_EXCEEDED"],
  ])("%s is %s", (name, code) => {
    expect(results[name]?.code).toBe(code);
  });

  it("reads an error's details from grpc-status-details-bin", () => {
    const status = fromBinary(StatusSchema, Buffer.from(results["not-found"]!.details!, "base64"));
    expect(fromBinary(ErrorInfoSchema, status.details[0]!.value).reason).toBe("AGENT_NOT_FOUND");
  });
});
