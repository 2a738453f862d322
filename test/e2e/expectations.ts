/** What the fixture networks in test/fixtures/registries must look like on every protocol. */
export const fixtureEnv = { AGENT_MANIFEST_FILE: "test/fixtures/registries/manifest.hocon" };

export const expectedAgents = [
  { agent_name: "greeter", description: "Greets people and hands questions to a helper", tags: ["demo", "greeting"] },
  { agent_name: "relay", description: "Relays to other networks", tags: ["relay"] },
];

export const expectedGreeterFunction = {
  description: "Greets the user",
  parameters: {
    type: "object",
    properties: { name: { type: "string", description: "who to greet" } },
    required: ["name"],
  },
};

export const expectedRelayConnectivity = [
  { origin: "Relay", tools: ["Counter", "/greeter", "http://127.0.0.1:9/remote_net"], display_as: "llm_agent" },
  { origin: "Counter", display_as: "calculator" },
  { origin: "/greeter", display_as: "external_agent" },
  { origin: "http://127.0.0.1:9/remote_net", display_as: "external_agent" },
];
