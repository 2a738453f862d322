import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, operationsApi, roomyAdmission, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, queryPostgres, type TestDatabase } from "../support/postgres-database.js";
import { until } from "../support/wait.js";

/*
 * A replica killed (SIGKILL) after its upstream received a request and before the outcome was written, on PostgreSQL
 * with two replicas. The upstream of `ledger` honours an idempotency key, as payment APIs do: the surviving replica
 * sends the request again with the same key and the operation ends with the upstream's first answer, recovered by
 * replay. The upstream of `plain` does not, and its credential names no idempotency header: the request is never sent
 * again and the operation ends `upstream_result_unknown`, as before.
 */
const policy = { rules: [{ id: "auto", effect: "allow", operations: ["http.request"] }] };
const leaseSeconds = 5;

interface Received {
  path: string;
  key: string | undefined;
}

/**
 * `/ledger/...` charges once per idempotency key and answers a repeated key with the first answer; `/plain/...` ignores
 * keys. Both hold their first answers until released, so that a replica can be killed while it waits for them.
 */
async function startScriptedUpstream() {
  const received: Received[] = [];
  const charges: string[] = [];
  const firstAnswers = new Map<string, string>();
  const server = http.createServer((req, res) => {
    const key = req.headers["idempotency-key"] as string | undefined;
    received.push({ path: req.url ?? "", key });
    req.resume();
    if (req.url?.startsWith("/ledger/") && key !== undefined) {
      const answered = firstAnswers.get(key);
      if (answered !== undefined) return void res.writeHead(201, { "content-type": "application/json" }).end(answered);
      charges.push(req.url);
      firstAnswers.set(key, JSON.stringify({ charge: `ch_${charges.length}`, path: req.url }));
    }
    // Held: the replica waiting for this answer is killed before it arrives.
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    charges,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

const post = (key: string, credential: string, path: string) => ({
  idempotency_key: key,
  operation: "http.request",
  target: { credential, path },
  arguments: { method: "POST", body: { amount: 4200, currency: "eur" } },
  reason: "charge the order",
});

describe("a replica killed between the upstream's receipt and the outcome's write", () => {
  let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
  let database: TestDatabase;
  const replicas: AxonProcess[] = [];

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    database = await createPostgresDatabase();
  });
  afterAll(async () => {
    await Promise.allSettled(replicas.map((axon) => axon.stop(2_000)));
    upstream?.close();
    await database?.drop();
  });

  it("the survivor replays the call an idempotent upstream can answer, and leaves the other unknown, never re-sent", async () => {
    const files = writeFiles(upstream.url, roomyAdmission, policy);
    const credential = { header: "Authorization", scheme: "Bearer", secret_env: "UPSTREAM_TOKEN", methods: ["POST"] };
    writeFileSync(
      files.AXON_CREDENTIALS_FILE,
      JSON.stringify({
        ledger: { ...credential, base_url: `${upstream.url}/ledger`, idempotency_header: "Idempotency-Key" },
        plain: { ...credential, base_url: `${upstream.url}/plain` },
      }),
    );
    const env = { ...files, DATABASE_URL: database.url, AXON_REPLICA_LEASE_SECONDS: String(leaseSeconds) };

    // The first replica alone claims both, and dies waiting for their answers.
    const doomed = await startAxonProcess(env, { startupMs: 60_000 });
    replicas.push(doomed);
    const api = operationsApi(doomed.url);
    const ledger = (await api.post(alice, post("order-1-ledger", "ledger", "/charges"))).body.id as string;
    const plain = (await api.post(alice, post("order-1-plain", "plain", "/charges"))).body.id as string;
    await until(() => upstream.received.length === 2, "both calls to reach their upstreams");
    const survivor = await startAxonProcess(env, { startupMs: 60_000 });
    replicas.push(survivor);
    doomed.child.kill("SIGKILL");

    const onSurvivor = operationsApi(survivor.url);
    const recovered = await onSurvivor.waitTerminal(alice, ledger);
    expect(recovered).toMatchObject({ state: "succeeded", result: { status: 201, body: { charge: "ch_1", path: "/ledger/charges" } }, recovered_by: "replay" });
    const unknown = await onSurvivor.waitTerminal(alice, plain);
    expect(unknown).toMatchObject({ state: "failed", error: { code: "upstream_result_unknown" } });
    expect(unknown.recovered_by).toBeUndefined();

    // The ledger saw the same key twice and charged once; the plain upstream was called once, with no key.
    const toLedger = upstream.received.filter((request) => request.path === "/ledger/charges");
    expect(toLedger).toHaveLength(2);
    expect(toLedger[0]!.key).toMatch(/^[0-9a-f]{64}$/);
    expect(toLedger[1]!.key).toBe(toLedger[0]!.key);
    expect(toLedger[0]!.key).not.toContain("order-1-ledger");
    expect(upstream.charges).toEqual(["/ledger/charges"]);
    expect(upstream.received.filter((request) => request.path === "/plain/charges")).toEqual([{ path: "/plain/charges", key: undefined }]);

    // The audit says which outcome was recovered, and how.
    const audits = await queryPostgres<{ operationId: string; action: string; detail: unknown }>(
      database.url,
      `SELECT "operationId", action, detail FROM "AuditRecord" WHERE action IN ('operation.succeeded', 'operation.failed') AND "operationId" IN ('${ledger}', '${plain}') ORDER BY action DESC`,
    );
    expect(audits).toEqual([
      { operationId: ledger, action: "operation.succeeded", detail: { recovered_by: "replay" } },
      { operationId: plain, action: "operation.failed", detail: { code: "upstream_result_unknown" } },
    ]);
    const reconciled = await until(() => {
      const lines = survivor.logs.filter((line) => line.msg === "reconciled an interrupted operation");
      return lines.length >= 2 && lines;
    }, "both reconciliations logged");
    expect(reconciled.map((line) => [line.operation_id, line.reconciled]).sort()).toEqual([
      [ledger, "replay"],
      [plain, "unknown"],
    ].sort());
  }, 90_000);
});
