import zlib from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatRequestSchema } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { envelope } from "../support/envelopes.js";
import { ScriptedChats } from "../support/scripted-chat.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { fixtureEnv } from "../e2e/expectations.js";
import { ConformanceClient, streamProtocols, unaryProtocols, type CallRequest, type Protocol } from "./protocols.js";

// What a server must answer to the messages of a request, however they are framed: connectrpc/conformance's
// "unary", "server stream" and "compression" suites, gRPC's PROTOCOL-HTTP2.md and doc/compression.md.
const maxRequestBytes = 64 * 1024;
const list = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";
const chat = "/dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat";

let server: TestServer;
let client: ConformanceClient;
beforeAll(async () => {
  server = await startTestServer({ env: { ...fixtureEnv, AXON_MAX_REQUEST_BYTES: String(maxRequestBytes) }, chats: new ScriptedChats() });
  client = new ConformanceClient(server.url);
});
afterAll(async () => {
  client.close();
  await server.close();
});

const emptyRequest = (protocol: Protocol) => Buffer.from(protocol.codec === "json" ? "{}" : "");
const chatRequest = (protocol: Protocol) => {
  const request = create(ChatRequestSchema, { agentName: "greeter", userMessage: { text: "hi" } });
  return protocol.codec === "json" ? Buffer.from(JSON.stringify({ agent_name: "greeter", user_message: { text: "hi" } })) : Buffer.from(toBinary(ChatRequestSchema, request));
};
const gzipped = (bytes: Buffer) => zlib.gzipSync(bytes);
const encodingHeader = (protocol: Protocol) => (protocol.contentType.startsWith("application/grpc") ? "grpc-encoding" : protocol.enveloped ? "connect-content-encoding" : "content-encoding");
const acceptEncodingHeader = (protocol: Protocol) => (protocol.contentType.startsWith("application/grpc") ? "grpc-accept-encoding" : protocol.enveloped ? "connect-accept-encoding" : "accept-encoding");

interface Case {
  name: string;
  /** Which protocols the case applies to (all when absent). */
  only?: (protocol: Protocol) => boolean;
  request: (protocol: Protocol, path: string, message: Buffer) => CallRequest;
  code: Code | 0;
  reason?: string;
  /** A response header the answer must carry, by protocol. */
  header?: (protocol: Protocol) => [name: string, pattern: RegExp];
  /** The HTTP status of a Connect unary answer, where the protocol fixes it. */
  connectHttpStatus?: number;
}

const enveloped = (protocol: Protocol) => protocol.enveloped;

const cases: Case[] = [
  { name: "one well-formed message is answered", request: (_p, path, message) => ({ path, messages: [message] }), code: 0 },
  { name: "a request without a message is UNIMPLEMENTED", only: enveloped, request: (_p, path) => ({ path, body: Buffer.alloc(0) }), code: Code.Unimplemented },
  { name: "two messages on a method that takes one are UNIMPLEMENTED", only: enveloped, request: (_p, path, message) => ({ path, messages: [message, message] }), code: Code.Unimplemented },
  {
    name: "a message shorter than its declared length is INVALID_ARGUMENT",
    only: enveloped,
    request: (_p, path, message) => ({ path, body: envelope(0, message, message.byteLength + 10) }),
    code: Code.InvalidArgument,
  },
  {
    name: "a message declared larger than the limit is refused before it is read",
    only: enveloped,
    request: (_p, path) => ({ path, body: envelope(0, "x", maxRequestBytes + 1) }),
    code: Code.ResourceExhausted,
    reason: "REQUEST_TOO_LARGE",
  },
  {
    name: "a body larger than the limit is refused",
    only: (protocol) => !protocol.enveloped,
    request: (_p, path) => ({ path, body: Buffer.alloc(maxRequestBytes + 1, 0x20) }),
    code: Code.ResourceExhausted,
    reason: "REQUEST_TOO_LARGE",
  },
  {
    name: "a message flagged compressed without an encoding is INTERNAL",
    only: enveloped,
    request: (_p, path, message) => ({ path, body: envelope(1, gzipped(message)) }),
    code: Code.Internal,
  },
  {
    name: "a message flagged compressed with the identity encoding is INTERNAL",
    only: enveloped,
    request: (protocol, path, message) => ({ path, body: envelope(1, gzipped(message)), headers: { [encodingHeader(protocol)]: "identity" } }),
    code: Code.Internal,
  },
  {
    name: "a gzipped message is read",
    request: (protocol, path, message) => ({
      path,
      body: protocol.enveloped ? envelope(1, gzipped(message)) : gzipped(message),
      headers: { [encodingHeader(protocol)]: "gzip" },
    }),
    code: 0,
  },
  {
    name: "a brotli-compressed message is read",
    request: (protocol, path, message) => ({
      path,
      body: protocol.enveloped ? envelope(1, zlib.brotliCompressSync(message)) : zlib.brotliCompressSync(message),
      headers: { [encodingHeader(protocol)]: "br" },
    }),
    code: 0,
  },
  {
    name: "an unsupported encoding is UNIMPLEMENTED and the answer lists the supported ones",
    request: (protocol, path, message) => ({ path, body: protocol.enveloped ? envelope(1, message) : message, headers: { [encodingHeader(protocol)]: "snappy" } }),
    code: Code.Unimplemented,
    header: (protocol) => [acceptEncodingHeader(protocol), /gzip/],
  },
  {
    name: "an unknown service is UNIMPLEMENTED",
    request: (_p, _path, message) => ({ path: "/no.such.Service/List", messages: [message] }),
    code: Code.Unimplemented,
    connectHttpStatus: 404,
  },
  {
    name: "an unknown method of a known service is UNIMPLEMENTED",
    request: (_p, path, message) => ({ path: `${path.slice(0, path.lastIndexOf("/"))}/NoSuchMethod`, messages: [message] }),
    code: Code.Unimplemented,
    connectHttpStatus: 404,
  },
  {
    name: "a malformed timeout is INVALID_ARGUMENT",
    request: (protocol, path, message) => ({ path, messages: [message], headers: { [Object.keys(protocol.timeout(1))[0]!]: "soon" } }),
    code: Code.InvalidArgument,
  },
];

const jsonCases: Case[] = [
  {
    name: "an unknown JSON field is ignored",
    request: (_p, path) => ({ path, messages: [Buffer.from('{"no_such_field":1}')] }),
    code: 0,
  },
  {
    name: "an unknown JSON field is ignored in a gzipped message too",
    request: (protocol, path) => ({
      path,
      body: protocol.enveloped ? envelope(1, gzipped(Buffer.from('{"no_such_field":1}'))) : gzipped(Buffer.from('{"no_such_field":1}')),
      headers: { [encodingHeader(protocol)]: "gzip" },
    }),
    code: 0,
  },
  {
    name: "an unknown JSON field is ignored in a brotli-compressed message too",
    request: (protocol, path) => ({
      path,
      body: protocol.enveloped ? envelope(1, zlib.brotliCompressSync('{"no_such_field":1}')) : zlib.brotliCompressSync('{"no_such_field":1}'),
      headers: { [encodingHeader(protocol)]: "br" },
    }),
    code: 0,
  },
];

function expectOutcome(outcome: Awaited<ReturnType<ConformanceClient["call"]>>, protocol: Protocol, expected: Case): void {
  expect({ code: outcome.code, reason: expected.reason === undefined ? undefined : outcome.reason }).toEqual({ code: expected.code, reason: expected.reason });
  if (expected.connectHttpStatus !== undefined && !protocol.enveloped) expect(outcome.httpStatus).toBe(expected.connectHttpStatus);
  if (expected.header) {
    const [name, pattern] = expected.header(protocol);
    expect({ ...outcome.headers, ...outcome.trailers }[name]).toMatch(pattern);
  }
}

describe.each(unaryProtocols)("a unary call over $name", (protocol) => {
  const applicable = [...cases, ...(protocol.codec === "json" ? jsonCases : [])].filter((entry) => entry.only?.(protocol) ?? true);
  it.each(applicable)("$name", async (entry) => {
    expectOutcome(await client.call(protocol, entry.request(protocol, list, emptyRequest(protocol))), protocol, entry);
  });

  it("an empty gzipped body is the empty message", async () => {
    const outcome = await client.call(protocol, { path: list, body: Buffer.alloc(0), headers: { [encodingHeader(protocol)]: "gzip" } });
    expect(outcome.code).toBe(protocol.enveloped ? Code.Unimplemented : 0);
  });
});

describe.each(streamProtocols)("a server stream over $name", (protocol) => {
  const applicable = cases.filter((entry) => entry.only?.(protocol) ?? true);
  it.each(applicable)("$name", async (entry) => {
    const outcome = await client.call(protocol, entry.request(protocol, chat, chatRequest(protocol)));
    expectOutcome(outcome, protocol, entry);
    if (entry.code === 0) expect(outcome.messages.length).toBeGreaterThan(0);
  });
});
