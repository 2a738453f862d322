import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { maximal, messagesOf, protocols, type Chat, type Json } from "../support/chat-protocols.js";
import { operationsApi, operator, roomyAdmission, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { refundsNetwork, scriptRefunds } from "../support/refunds-network.js";
import { until } from "../support/wait.js";

/*
 * HumanInTheLoopMiddleware's interrupted tool calls are operator approvals: Operator V1 requests for `agent.tool_call`
 * (held by the built-in policy), decided over the operator API while the chat waits.
 */
type Operator = ReturnType<typeof operatorOf>;

function operatorOf(baseUrl: string) {
  const api = operationsApi(baseUrl);
  const decide = async (id: string, decision: "approve" | "deny", body: Json = {}) => {
    const request = await api.json(await api.call("GET", `/api/operator/v1/requests/${id}`, operator));
    return api.json(await api.call("POST", `/api/operator/v1/requests/${id}/${decision}`, operator, { expected_revision: request.body.revision, ...body }));
  };
  return {
    /** The pending agent.tool_call request for `amount`, once the chat's call waits on it. */
    pending: (amount: number) =>
      until(async () => {
        const listed = await api.json(await api.call("GET", "/api/operator/v1/requests?status=pending&operation=agent.tool_call", operator));
        for (const { id } of listed.body.requests as Json[]) {
          // The list leaves out what the request asks for; one request shows it.
          const request = (await api.json(await api.call("GET", `/api/operator/v1/requests/${id}`, operator))).body;
          if (request.linked_operation?.arguments?.arguments?.amount === amount) return request;
        }
        return undefined;
      }, `the held Refund of ${amount}`),
    get: async (id: string) => (await api.json(await api.call("GET", `/api/operator/v1/requests/${id}`, operator))).body,
    approve: (id: string, body: Json = {}) => decide(id, "approve", body),
    deny: (id: string, reason: string) => decide(id, "deny", { reason }),
  };
}

const refund = (amount: number) => ({ user_message: { text: `refund ${amount}` }, chat_filter: maximal });

/** The chat's own messages: the waiting note, the tool's result, the answer. */
function outcomeOf(lines: Json[]) {
  const messages = messagesOf(lines);
  return {
    waiting: messages.find((message) => message.type === "AGENT" && message.structure?.approval_pending === true),
    answer: messages.at(-1)?.text as string | undefined,
    refunds: messages.filter((message) => message.type === "AGENT" && message.structure?.invoking_start === true && message.structure?.invoked_agent_name === "Refund"),
  };
}

async function expectApprovalCycle(chat: Chat, server: { url: string }, decider: Operator, amount: number): Promise<void> {
  const chatting = chat(server, "refunds", refund(amount));
  const request = await decider.pending(amount);
  expect(request).toMatchObject({ client_id: "anonymous", target: { network: "refunds", agent: "Clerk", tool: "Refund" } });
  expect(request.linked_operation.arguments).toMatchObject({ arguments: { customer: "Ada", amount }, allowed_decisions: ["approve", "edit", "reject"] });
  expect((await decider.approve(request.id)).status).toBe(200);
  const outcome = outcomeOf(await chatting);
  expect(outcome.waiting).toMatchObject({ structure: { request_id: request.id, tool: "Refund" } });
  expect(outcome.answer).toBe(`Done: refunded ${amount} to Ada`);
  // The call's operation ends once the tool ran, as the chat goes on.
  await until(async () => (await decider.get(request.id)).linked_operation.state === "succeeded", "the held call's operation succeeded");
}

describe("human in the loop on SQLite", () => {
  let llm: ScriptedLlm;
  let server: TestServer;
  let decider: Operator;
  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    scriptRefunds(llm);
    server = await startTestServer({ env: { ...llm.env, ...refundsNetwork, ...writeFiles("http://127.0.0.1:9", roomyAdmission) } });
    decider = operatorOf(server.url);
  });
  afterAll(async () => {
    await server.close();
    await llm.close();
  });

  describe.each(protocols.filter(([name]) => name !== "Connect"))("over %s", (_name, chat) => {
    let amount = _name === "gRPC" ? 200 : 100;
    const next = () => ++amount;

    it("an approved call runs, and the chat said it was waiting", async () => {
      await expectApprovalCycle(chat, server, decider, next());
    });

    it("an approval with the operator's arguments runs the tool with them", async () => {
      const asked = next();
      const chatting = chat(server, "refunds", refund(asked));
      const request = await decider.pending(asked);
      expect((await decider.approve(request.id, { arguments: { customer: "Ada", amount: 1 } })).status).toBe(200);
      expect(outcomeOf(await chatting).answer).toBe("Done: refunded 1 to Ada");
    });

    it("a denied call is not run: the model gets the operator's reason as the tool's result", async () => {
      const asked = next();
      const chatting = chat(server, "refunds", refund(asked));
      const request = await decider.pending(asked);
      expect((await decider.deny(request.id, "refunds above 50 need a manager")).status).toBe(200);
      const outcome = outcomeOf(await chatting);
      expect(outcome.answer).toBe("Done: refunds above 50 need a manager");
      expect(outcome.refunds).toEqual([]);
    });
  });

  it("a chat cancelled while it waits withdraws the request", async () => {
    const cancel = new AbortController();
    const response = await fetch(`${server.url}/api/v1/refunds/streaming_chat`, { method: "POST", body: JSON.stringify(refund(77)), signal: cancel.signal });
    const request = await decider.pending(77);
    cancel.abort();
    await response.body?.cancel().catch(() => undefined);
    await until(async () => (await decider.get(request.id)).status === "canceled", "the request withdrawn");
    expect((await decider.get(request.id)).linked_operation.state).toBe("canceled");
  });
});

describe("human in the loop on two replicas sharing PostgreSQL", () => {
  let llm: ScriptedLlm;
  let database: TestDatabase;
  const replicas: AxonProcess[] = [];
  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    scriptRefunds(llm);
    database = await createPostgresDatabase();
    const env = { ...llm.env, ...refundsNetwork, ...writeFiles("http://127.0.0.1:9", roomyAdmission), DATABASE_URL: database.url };
    for (const started of await Promise.all([startAxonProcess(env, { startupMs: 60_000 }), startAxonProcess(env, { startupMs: 60_000 })])) replicas.push(started);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await database?.drop();
    await llm?.close();
  });

  it.each(protocols.filter(([name]) => name !== "Connect"))("a call held on one replica is approved on the other, over %s", async (name, chat) => {
    const [chatting, deciding] = replicas as [AxonProcess, AxonProcess];
    await expectApprovalCycle(chat, chatting, operatorOf(deciding.url), name === "gRPC" ? 302 : 301);
  });

  it("a call held on one replica and denied on the other gets the reason", async () => {
    const [chatting, deciding] = replicas as [AxonProcess, AxonProcess];
    const decider = operatorOf(deciding.url);
    const chatted = protocols[0]![1](chatting, "refunds", refund(303));
    const request = await decider.pending(303);
    await decider.deny(request.id, "not today");
    expect(outcomeOf(await chatted).answer).toBe("Done: not today");
  });
});
