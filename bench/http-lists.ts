import type { HttpRequestSpec, KeepAliveHttpClient } from "./clients.js";
import type { CannedResponses } from "./serve-baselines.js";

/** ConciergeService.List over REST and Connect JSON, as the HTTP benches send it. */
export const listMethod = "/dev.cognizant_ai.neuro_san.api.grpc.concierge.ConciergeService/List";
export const httpLists: Record<string, HttpRequestSpec> = {
  rest: { method: "GET", path: "/api/v1/list" },
  connect: { method: "POST", path: listMethod, headers: { "content-type": "application/json" }, body: Buffer.from("{}") },
};

/** What the Axon behind `client` answers to each HTTP List, for bare node:http to answer byte for byte. */
export async function cannedHttpLists(client: KeepAliveHttpClient): Promise<CannedResponses> {
  const canned: CannedResponses = { grpc: { method: listMethod, messageBase64: "" }, http: [] };
  for (const spec of Object.values(httpLists)) {
    const reply = await client.send(spec);
    canned.http.push({ ...spec, contentType: reply.contentType, bodyBase64: reply.body.toString("base64") });
  }
  return canned;
}
