import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { finalOf, restChat } from "../support/chat-protocols.js";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { alice, roomyAdmission, writeFiles } from "../support/operations.js";
import { createPostgresDatabase, type TestDatabase } from "../support/postgres-database.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { until } from "../support/wait.js";
import { greeterSpec, neuroSan, reservingPolicy, temporaryNetworksApi } from "../support/temporary-networks.js";

/** Two `npm start` processes on one fresh PostgreSQL database, as replicas are deployed. */
describe("temporary networks on two replicas sharing PostgreSQL", () => {
  let llm: ScriptedLlm;
  let database: TestDatabase;
  let env: Record<string, string>;
  const processes: AxonProcess[] = [];

  const start = async () => {
    const axon = await startAxonProcess(env, { startupMs: 60_000 });
    processes.push(axon);
    return axon;
  };

  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    database = await createPostgresDatabase();
    env = { ...llm.env, ...writeFiles("http://127.0.0.1:1", roomyAdmission, reservingPolicy), DATABASE_URL: database.url, AGENT_MAX_TEMP_NETWORKS: "2" };
  });
  afterAll(async () => {
    await Promise.all(processes.map((axon) => axon.stop()));
    await database?.drop();
    await llm?.close();
  });

  it("one created on one replica is chatted with on the other at once, listed there, and counted against both", async () => {
    const [first, second] = await Promise.all([start(), start()]);
    const created = await temporaryNetworksApi(first.url).create(alice, { prefix: "designer", spec: greeterSpec("Greet in Breton."), public: true });
    expect(created.status).toBe(201);
    const { name } = created.body.network;

    // The other replica had not read it yet: asked for a reserved name it does not serve, it looks before answering.
    const answer = finalOf(await restChat(second, name, { user_message: { text: "Demat" } }));
    expect(answer).toMatchObject({ type: "AGENT_FRAMEWORK", text: "Answer: Demat" });
    expect(llm.requests.at(-1)!.request.system).toBe("Greet in Breton.");
    await until(async () => (await neuroSan(second.url).listed()).includes(name), "the second replica lists it");
    expect((await temporaryNetworksApi(second.url).get(alice, name)).body).toMatchObject({ name, client_id: "alice" });

    // The limit is counted in the database, whichever replica is asked.
    expect((await temporaryNetworksApi(second.url).create(alice, { spec: greeterSpec("Two.") })).status).toBe(201);
    expect((await temporaryNetworksApi(first.url).create(alice, { spec: greeterSpec("Three.") })).status).toBe(429);

    // Deleted on one, it stops being served on the other (at its next read).
    expect((await temporaryNetworksApi(second.url).delete(alice, name)).status).toBe(200);
    await until(async () => (await neuroSan(first.url).function(name)).status === 404, "the first replica stops serving it");
    await Promise.all([first.stop(), second.stop()]);
  });

  it("outlives every replica's restart until it expires", async () => {
    const before = await start();
    const { body } = await temporaryNetworksApi(before.url).create(alice, { prefix: "designer", spec: greeterSpec("Greet in Cornish.") });
    await before.stop();

    const after = await start();
    expect((await neuroSan(after.url).function(body.network.name)).body).toEqual({ function: { description: "Greets." } });
    expect(finalOf(await restChat(after, body.network.name, { user_message: { text: "Dydh da" } }))).toMatchObject({ text: "Answer: Dydh da" });
  });
});
