import { describe, expect, it } from "vitest";
import type { Provider } from "../../../src/operations/providers/provider.js";
import { ProviderRegistry } from "../../../src/operations/providers/registry.js";

function provider(operation: string): Provider {
  return {
    operation,
    validate: () => [],
    present: () => ({ title: operation, summary: "" }),
    execute: async () => ({ state: "succeeded", result: {} }),
    reconcile: async () => undefined,
  };
}

describe("ProviderRegistry", () => {
  it("finds each provider by its operation name and lists the names in registration order", () => {
    const chat = provider("agent.chat");
    const http = provider("http.request");
    const registry = new ProviderRegistry([chat]).register(http);
    expect(registry.get("agent.chat")).toBe(chat);
    expect(registry.get("http.request")).toBe(http);
    expect(registry.names()).toEqual(["agent.chat", "http.request"]);
  });

  it("knows nothing of an unregistered operation", () => {
    expect(new ProviderRegistry().get("shell.exec")).toBeUndefined();
  });

  it("refuses a second provider for the same operation", () => {
    const registry = new ProviderRegistry([provider("agent.chat")]);
    expect(() => registry.register(provider("agent.chat"))).toThrow(/already registered/);
  });
});
