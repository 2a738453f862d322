/** An Operation row as the broker would create it, for store tests: `id`, and a key of its own unless given. */
export function operationRow(id: string, idempotencyKey = id) {
  return {
    id,
    clientId: "client-a",
    idempotencyKey,
    requestHash: "ab".repeat(32),
    operation: "http.request",
    target: { url: "https://example.test/a", headers: { accept: ["json"] } },
    arguments: { body: null, retries: 2, nested: { ok: true, ratio: 0.5 } },
    reason: "because",
    state: "pending",
    revision: 1,
    presentationTitle: "Fetch a",
    presentationSummary: "GET https://example.test/a",
  };
}
