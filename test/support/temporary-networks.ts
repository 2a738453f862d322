type Json = Record<string, any>;

/** Who may reserve: alice, under her own prefixes. Chat stays open to everyone, as by default. */
export const reservingPolicy = {
  rules: [
    { id: "designers", effect: "allow", operations: ["network.reserve"], clients: ["alice"], targets: [{ prefix: "designer*" }, { prefix: "" }] },
    { id: "chat", effect: "allow", operations: ["agent.chat"] },
  ],
};

/** A one-agent network, as the Agent Network Designer writes them. */
export const greeterSpec = (greeting: string) => ({
  llm_config: { model_name: "gpt-4o-mini" },
  metadata: { description: "A network made at run time." },
  tools: [{ name: "Greeter", function: { description: "Greets." }, instructions: greeting }],
});

export const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";

/** The temporary networks API over REST, as a client with `token` calls it. */
export function temporaryNetworksApi(url: string) {
  const call = async (method: string, route: string, token: string | undefined, body?: Json) => {
    const response = await fetch(`${url}/api/networks/v1/temporary${route}`, {
      method,
      headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
  };
  return {
    create: (token: string | undefined, body: Json) => call("POST", "", token, body),
    list: (token: string) => call("GET", "", token),
    get: (token: string, name: string) => call("GET", `/${encodeURIComponent(name)}`, token),
    delete: (token: string, name: string) => call("DELETE", `/${encodeURIComponent(name)}`, token),
  };
}

/** The neuro-san surface of one server, as its clients see a network. */
export function neuroSan(url: string) {
  return {
    listed: async () => ((await (await fetch(`${url}/api/v1/list`)).json()) as { agents: { agent_name: string }[] }).agents.map((agent) => agent.agent_name),
    function: async (name: string) => {
      const response = await fetch(`${url}/api/v1/${encodeURIComponent(name)}/function`);
      return { status: response.status, body: (await response.json()) as Json };
    },
    mcpTools: async () => {
      const response = await fetch(`${url}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      return ((await response.json()) as { result: { tools: { name: string; title?: string }[] } }).result.tools;
    },
  };
}

