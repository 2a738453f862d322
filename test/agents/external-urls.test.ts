import { describe, expect, it } from "vitest";
import { streamingChatEndpoint, urlReferenceOf } from "../../src/agents/external-urls.js";

describe("a URL reference to another network, as neuro-san reads it", () => {
  it.each([
    ["http://agents.example.com/math_guy", "http://agents.example.com:8080", "math_guy"],
    ["https://agents.example.com/deep/math_guy", "https://agents.example.com:443", "deep/math_guy"],
    ["http://agents.example.com:9000/math_guy/", "http://agents.example.com:9000", "math_guy"],
    ["http://agents.example.com:80/math_guy", "http://agents.example.com:80", "math_guy"],
    ["https://agents.example.com:443/a/b/c", "https://agents.example.com:443", "a/b/c"],
    ["http://localhost:8081/math_guy", "http://localhost:8081", "math_guy"],
    ["http://[::1]/SAP%20SD%20Assistant", "http://[::1]:8080", "SAP SD Assistant"],
  ])("%s goes to %s, network %s", (reference, origin, network) => {
    expect(urlReferenceOf(reference)).toEqual({ kind: "other_server", origin, network });
  });

  it.each(["http://localhost/math_guy", "https://localhost/deep/math_guy?x=1"])("%s without a port is this server's own network", (reference) => {
    expect(urlReferenceOf(reference)).toMatchObject({ kind: "same_server" });
    expect(urlReferenceOf(reference)?.network).toBe(reference.includes("deep") ? "deep/math_guy" : "math_guy");
  });

  it.each(["http://agents.example.com", "http://agents.example.com/", "http://h/a%2F..%2Fb", "ftp://h/x", "not a url", "http://h/%E0"])("%s names no network", (reference) => {
    expect(urlReferenceOf(reference)).toBeUndefined();
  });

  it("posts to neuro-san's HTTP API with the whole name as one path segment", () => {
    expect(streamingChatEndpoint({ origin: "https://agents.example.com:443", network: "deep/math_guy" })).toBe(
      "https://agents.example.com:443/api/v1/deep%2Fmath_guy/streaming_chat",
    );
  });
});
