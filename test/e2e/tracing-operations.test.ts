import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, httpOp, operationsApi, operator, roomyAdmission, startUpstream, upstreamToken, writeFiles } from "../support/operations.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { until } from "../support/wait.js";

// Every http.request asks an operator: the operation is submitted on one replica and decided on the other.
const policy = { rules: [{ id: "ask", effect: "request", operations: ["http.request"] }] };

const clientTraceId = "5af7183fb1d4cf5f2a6b3c4d5e6f7a8b";
const clientSpanId = "a1b2c3d4e5f60718";

describe("an operation's trace across two replicas on PostgreSQL", () => {
  let receiver: OtlpReceiver;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let database: TestDatabase;
  const replicas: AxonProcess[] = [];

  beforeAll(async () => {
    [receiver, upstream, database] = await Promise.all([OtlpReceiver.start(), startUpstream(), createPostgresDatabase()]);
    const env = { ...writeFiles(upstream.url, roomyAdmission, policy), ...receiver.env(), DATABASE_URL: database.url };
    // One at a time: the second waits on the first's migration lock anyway.
    for (const name of ["replica-a", "replica-b"]) replicas.push(await startAxonProcess({ ...env, OTEL_SERVICE_NAME: name }, { startupMs: 60_000 }));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(replicas.map((axon) => axon.stop(2000)));
    await database?.drop();
    upstream?.close();
    await receiver?.close();
  });

  it("submit, policy decision, operator decision, execution and outcome are spans of the submitter's trace, wherever they ran", async () => {
    const [first, second] = replicas as [AxonProcess, AxonProcess];
    const submitted = await fetch(`${first.url}/api/agent/v1/operations`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice}`, "content-type": "application/json", traceparent: `00-${clientTraceId}-${clientSpanId}-01` },
      body: JSON.stringify(httpOp("traced-1", "/traced")),
    });
    const operation = (await submitted.json()) as { id: string; state: string };
    expect(operation.state).toBe("pending");
    // The operator decides on the other replica, in a call of its own (no traceparent: a trace of its own).
    const onSecond = operationsApi(second.url);
    expect((await onSecond.approve(operation.id)).status).toBe(200);
    expect((await onSecond.waitTerminal(alice, operation.id)).state).toBe("succeeded");

    const named = (name: string) => () => receiver.spans.find((span) => span.name === name && span.traceId === clientTraceId);
    const submit = await until(named("submit http.request"), "the submit span");
    const decision = await until(named("operator decision"), "the operator's decision span");
    const execution = await until(named("execute http.request"), "the execution span");
    const outcome = await until(named("outcome"), "the outcome span");
    const policyDecision = await until(named("policy decision"), "the policy decision span");

    const server = receiver.spans.find((span) => span.spanId === submit.parentSpanId) as ReceivedSpan;
    expect(server).toMatchObject({ service: "replica-a", parentSpanId: clientSpanId, kind: 2 });
    expect(submit.attributes).toMatchObject({ "axon.operation.id": operation.id, "axon.operation.state": "pending", "axon.operation.replayed": false });
    expect(policyDecision).toMatchObject({ parentSpanId: submit.spanId, attributes: { "axon.policy.effect": "request" } });
    expect(decision).toMatchObject({ service: "replica-b", parentSpanId: submit.spanId, attributes: { "axon.decision": "approve" } });
    expect(execution).toMatchObject({ parentSpanId: submit.spanId, attributes: { "axon.operation.id": operation.id } });
    expect(outcome).toMatchObject({ parentSpanId: submit.spanId, attributes: { "axon.operation.state": "succeeded" } });
    // The upstream got the trace with the request the execution made.
    const call = upstream.received.find((request) => request.url === "/traced");
    expect(call?.traceparent).toBe(`00-${clientTraceId}-${execution.spanId}-01`);
    // The operator's own call is a trace of its own: only the decision joins the submitter's.
    const approveCall = receiver.spans.find((span) => span.attributes["http.route"] === "/api/operator/v1/requests/{id}/approve");
    expect(approveCall).toMatchObject({ service: "replica-b", kind: 2 });
    expect(approveCall!.traceId).not.toBe(clientTraceId);
    // No secret, token or operator credential in what was exported.
    const exported = Buffer.concat(receiver.rawBodies).toString("latin1");
    for (const secret of [alice, operator, upstreamToken]) expect(exported).not.toContain(secret);
  }, 120_000);
});
