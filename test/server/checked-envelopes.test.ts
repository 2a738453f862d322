import { brotliCompressSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { checkedEnvelopes, isEnveloped, type EnvelopeChecks } from "../../src/server/connect/checked-envelopes.js";
import { envelope } from "../support/envelopes.js";

/** Passes `body` through in the chunks given by `cuts`; the bytes that came out, or the error's message. */
async function passThrough(body: Buffer, cuts: number[], checks: EnvelopeChecks): Promise<string> {
  const bounds = [0, ...cuts, body.byteLength];
  async function* chunks() {
    for (let index = 1; index < bounds.length; index++) yield new Uint8Array(body.subarray(bounds[index - 1], bounds[index]));
  }
  let passed = 0;
  try {
    for await (const chunk of checkedEnvelopes(chunks(), checks)) passed += chunk.byteLength;
    return `passed ${passed}`;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Every way of cutting `body` into two or three chunks. */
function everyCut(body: Buffer): number[][] {
  const cuts: number[][] = [];
  for (let first = 1; first < body.byteLength; first++) {
    cuts.push([first]);
    for (let second = first + 1; second < body.byteLength; second += 3) cuts.push([first, second]);
  }
  return cuts;
}

const strict: EnvelopeChecks = { maxBytes: 100, strict: true, json: true, encoding: undefined };
const lenient: EnvelopeChecks = { maxBytes: 100, strict: false, json: true, encoding: undefined };

describe("the messages of an enveloped request", () => {
  it("pass on unchanged however they are cut into chunks", async () => {
    const strictBody = Buffer.concat([envelope(0, `{"a":"${"x".repeat(80)}"}`), envelope(0, '{"c":{"d":1}}')]);
    const lenientBody = Buffer.concat([envelope(0, "x".repeat(90)), envelope(0, '{"c":1}'), envelope(0, "y".repeat(100))]);
    for (const [body, checks] of [[strictBody, strict], [lenientBody, lenient]] as const) {
      const outcomes = new Set(await Promise.all(everyCut(body).map((cuts) => passThrough(body, cuts, checks))));
      expect([...outcomes]).toEqual([`passed ${body.byteLength}`]);
    }
  });

  it("of a strict service are refused for a key given twice, wherever the chunks are cut", async () => {
    const body = Buffer.concat([envelope(0, '{"a":1}'), envelope(0, '{"b":1,"b":2}')]);
    const outcomes = new Set(await Promise.all(everyCut(body).map((cuts) => passThrough(body, cuts, strict))));
    expect([...outcomes]).toEqual(["[invalid_argument] a key appears twice in one JSON object"]);
  });

  it("are refused from the declared length of one over the limit, behind a large message that is not held", async () => {
    const body = Buffer.concat([envelope(0, "x".repeat(90)), envelope(0, "y", 101)]);
    const outcomes = new Set(await Promise.all(everyCut(body).map((cuts) => passThrough(body, cuts, lenient))));
    expect([...outcomes]).toEqual(["[resource_exhausted] request body too large"]);
  });

  it("of a strict service are inflated to be read, gzip and brotli alike; another encoding is left to connect-node", async () => {
    const json = '{"b":1,"b":2}';
    const compressed = (bytes: Buffer) => envelope(1, bytes);
    const refusal = "[invalid_argument] a key appears twice in one JSON object";
    expect(await passThrough(compressed(gzipSync(json)), [7], { ...strict, encoding: "gzip" })).toBe(refusal);
    expect(await passThrough(compressed(brotliCompressSync(json)), [], { ...strict, encoding: "br" })).toBe(refusal);
    expect(await passThrough(envelope(1, json), [], { ...strict, encoding: "snappy" })).toBe("passed 18");
    expect(await passThrough(compressed(gzipSync('{"b":1}')), [], { ...strict, encoding: "gzip" })).toMatch(/^passed/);
  });

  it("are told by their content type: Connect streams, gRPC and gRPC-Web, not Connect unary or gRPC-Web's text form", () => {
    const enveloped = ["application/connect+json", "application/connect+proto", "application/grpc", "application/grpc+json", "application/grpc-web+proto"];
    const whole = ["application/json", "application/proto", "application/grpc-web-text", "application/grpc-web-text+proto", undefined];
    expect(enveloped.map(isEnveloped)).toEqual(enveloped.map(() => true));
    expect(whole.map(isEnveloped)).toEqual(whole.map(() => false));
  });
});
