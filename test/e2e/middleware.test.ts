import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maximal, messagesOf, protocols } from "../support/chat-protocols.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";

/** Middleware in the server as it runs chats: on the chat thread, whatever the protocol. */
describe.each(protocols)("the studio's pii_middleware network over %s", (_name, chat) => {
  let llm: ScriptedLlm;
  let server: TestServer;
  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    llm.script(() => ({ text: "Your message was left at 867-5309." }));
    server = await startTestServer({ env: { ...llm.env, AGENT_MANIFEST_FILE: path.join(projectRoot, "test/fixtures/middleware/studio/manifest.hocon") } });
  });
  afterAll(async () => {
    await server.close();
    await llm.close();
  });

  it("redacts the number in the answer before the client sees it, as its args say; the LLM got the input as written", async () => {
    const lines = await chat(server, "pii_middleware", { user_message: { text: "Send a message to Jenny at 867-5309." }, chat_filter: maximal });
    const messages = messagesOf(lines);
    expect(messages.at(-1).text).toBe("Your message was left at [REDACTED_PHONE_NUMBER].");
    expect(JSON.stringify(messages)).not.toContain("left at 867-5309");
    expect(messages.filter((message) => message.type === "AI").map((message) => message.text)).toEqual(["Your message was left at [REDACTED_PHONE_NUMBER]."]);
    expect(llm.requests.at(-1)!.request.messages.at(-1)!.content).toBe("Send a message to Jenny at 867-5309.");
  });
});
