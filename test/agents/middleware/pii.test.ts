import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { applyStrategy, piiRuleOf, redacted } from "../../../src/agents/middleware/pii.js";
import { MiddlewareNetworks } from "./harness.js";

const rule = (pii_type: string, strategy = "redact", detector?: string) => piiRuleOf({ pii_type, strategy, ...(detector === undefined ? {} : { detector }) });

describe("PIIMiddleware's detectors and strategies, as LangChain's", () => {
  it("redacts each built-in type with its name in capitals", () => {
    expect(redacted(rule("email"), "mail ann@example.org now")).toBe("mail [REDACTED_EMAIL] now");
    expect(redacted(rule("credit_card"), "card 4111 1111 1111 1111, not 4111 1111 1111 1112")).toBe("card [REDACTED_CREDIT_CARD], not 4111 1111 1111 1112");
    expect(redacted(rule("ip"), "from 10.0.0.255 not 10.0.0.256 nor 10.01.0.1")).toBe("from [REDACTED_IP] not 10.0.0.256 nor 10.01.0.1");
    expect(redacted(rule("mac_address"), "nic 00:1A:2b:3C:4d:5E")).toBe("nic [REDACTED_MAC_ADDRESS]");
    expect(redacted(rule("url"), "see https://example.org/a?b=1 and www.example.org and example.org/path but not example.org")).toBe(
      "see [REDACTED_URL] and [REDACTED_URL] and [REDACTED_URL] but not example.org",
    );
  });

  it("finds every address LangChain's email pattern finds, where a global search of it finds them", () => {
    const pattern = /(?<![0-9A-Za-z_])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?![0-9A-Za-z_])/g;
    const text = fc.array(fc.constantFrom("a", "Z", "1", "_", ".", "-", "+", "@", "@", " ", "é", "x.io", "co"), { maxLength: 40 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(text, (content) => {
        const expected = [...content.matchAll(pattern)].map((match) => ({ type: "email", value: match[0], start: match.index, end: match.index + match[0].length }));
        expect(rule("email").detector(content)).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("finds the bare URLs LangChain's pattern finds, where a global search of it finds them", () => {
    const bare = /\b(?:www\.)?[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+(?:\/\S*)?/g;
    const text = fc.array(fc.constantFrom("a", "b1", "-", ".", "/", " ", "\n", "www.", "x.io", "é"), { maxLength: 30 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(text, (content) => {
        const expected = [...content.matchAll(bare)]
          .map((match) => match[0])
          .filter((url) => (url.includes("/") || url.startsWith("www.")) && url.split("/")[0]!.includes("."));
        expect(rule("url").detector(content).map((match) => match.value)).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it("finds PII written against non-English text", () => {
    expect(redacted(rule("email"), "联系alice@example.com谢谢")).toBe("联系[REDACTED_EMAIL]谢谢");
  });

  it("masks each type as LangChain does", () => {
    expect(redacted(rule("email", "mask"), "ann@mail.example.org")).toBe("ann@****.org");
    expect(redacted(rule("credit_card", "mask"), "4111-1111-1111-1111 and 4111111111111111")).toBe("****-****-****-1111 and ************1111");
    expect(redacted(rule("ip", "mask"), "192.168.1.42")).toBe("*.*.*.42");
    expect(redacted(rule("mac_address", "mask"), "00-1a-2b-3c-4d-5e")).toBe("**-**-**-**-**-5e");
    expect(redacted(rule("url", "mask"), "https://example.org")).toBe("[MASKED_URL]");
    expect(redacted(rule("phone_number", "mask", "\\d{3}-\\d{4}"), "call 867-5309")).toBe("call ****5309");
  });

  it("hashes with the type and the first 8 hex digits of the value's SHA-256", () => {
    expect(redacted(rule("email", "hash"), "ann@example.org")).toBe("<email_hash:438c4c7a>");
  });

  it("blocks with PIIDetectionError counting the matches", () => {
    expect(() => redacted(rule("email", "block"), "a@b.io and c@d.io")).toThrow("Detected 2 instance(s) of email in text content");
    expect(applyStrategy("clean", [], "block")).toBe("clean");
  });

  it("runs a custom detector written as a Python regular expression, named groups included", () => {
    expect(redacted(rule("api_key", "redact", "sk-(?P<key>[a-zA-Z0-9]{8})"), "key sk-abcd1234 here")).toBe("key [REDACTED_API_KEY] here");
  });
});

/** The studio's `basic/pii_middleware`, as its facts are: a phone number detector, redacted on the way out only. */
const prankster = `
{
  "llm_config": { "model_name": "gpt-4o-mini" },
  "tools": [
    {
      "name": "prankster",
      "function": { "description": "Leaves a message at a phone number." },
      "instructions": "Say the message was left at the number you were given.",
      "tools": [],
      "middleware": [
        {
          "class": "langchain.agents.middleware.PIIMiddleware",
          "args": { "pii_type": "phone_number", "detector": "[a-zA-Z0-9]{3}-[a-zA-Z0-9]{4}", "strategy": "redact", "apply_to_input": false, "apply_to_output": true }
        }
      ]
    }
  ]
}`;

/** Input and tool results redacted before the LLM sees them; a sub-agent whose answer holds an IP address. */
const guarded = `
{
  "llm_config": { "model_name": "gpt-4o-mini" },
  "tools": [
    {
      "name": "Front",
      "function": { "description": "Answers." },
      "instructions": "Use Lookup.",
      "tools": ["Lookup"],
      "middleware": [
        { "class": "langchain.agents.middleware.PIIMiddleware", "args": { "pii_type": "email", "strategy": "hash" } },
        { "class": "langchain.agents.middleware.pii.PIIMiddleware", "args": { "pii_type": "ip", "strategy": "mask", "apply_to_input": false, "apply_to_tool_results": true } }
      ]
    },
    { "name": "Lookup", "function": { "description": "Looks up.", "parameters": { "type": "object", "properties": { "q": { "type": "string" } } } }, "instructions": "Answer with the server's address." }
  ]
}`;

describe("PIIMiddleware in an agent's run", () => {
  let networks: MiddlewareNetworks;
  beforeAll(async () => {
    networks = await MiddlewareNetworks.start({ pii_middleware: prankster, guarded });
  });
  afterAll(() => networks.close());
  beforeEach(() => networks.llm.reset());

  it("pii_middleware: the LLM gets the number as the user wrote it, the client only the redacted answer", async () => {
    networks.llm.enqueue({ text: "Your message was left at 867-5309." });
    const chat = await networks.chat("pii_middleware", "Send a message to Jenny at 867-5309.");
    expect(networks.llm.requests[0]!.request.messages.at(-1)).toEqual({ role: "user", content: "Send a message to Jenny at 867-5309." });
    expect(chat.answer).toBe("Your message was left at [REDACTED_PHONE_NUMBER].");
    expect(chat.of("prankster")).toContainEqual({ type: "AI", text: "Your message was left at [REDACTED_PHONE_NUMBER]." });
    // The answer the client keeps for its next turn is redacted too.
    const history = chat.messages.at(-1)!.chatContext!.chatHistories[0]!.messages;
    expect(history.at(-1)!.text).toBe("Your message was left at [REDACTED_PHONE_NUMBER].");
  });

  it("redacts the input before any LLM sees it, and tool results before the next model call, in the stream too", async () => {
    networks.llm.script((request) => {
      const last = request.messages.at(-1)!;
      if (request.system === "Use Lookup." && last.role === "user") return { toolCalls: [{ name: "Lookup", arguments: { q: "server" } }] };
      if (request.system === "Use Lookup.") return { text: `Done: ${last.content}` };
      return { text: "The server is at 10.1.2.3." };
    });
    const chat = await networks.chat("guarded", "I am bob@example.com: where is the server?");
    const toFront = networks.llm.requests.filter((recorded) => recorded.request.system === "Use Lookup.");
    expect(toFront[0]!.request.messages.at(-1)!.content).toBe("I am <email_hash:5ff860bf>: where is the server?");
    expect(toFront[1]!.request.messages.at(-1)).toMatchObject({ role: "tool", content: "The server is at *.*.*.3." });
    expect(chat.answer).toBe("Done: The server is at *.*.*.3.");
    expect(chat.of("Front")).toContainEqual({ type: "HUMAN", text: "I am <email_hash:5ff860bf>: where is the server?" });
    expect(chat.everything).not.toContain("bob@example.com");
    const result = chat.messages.find((message) => message.toolResultOrigin.length > 0)!;
    expect(result.text).toBe("The server is at *.*.*.3.");
  });

  it.each([
    ["anthropic", "claude-3-5-haiku-latest"],
    ["bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"],
  ] as const)("redacts the same whatever the provider: %s", async (kind, model) => {
    const other = await MiddlewareNetworks.start({ pii_middleware: prankster.replace("gpt-4o-mini", model) }, {}, undefined, kind);
    other.llm.enqueue({ text: "Left at 867-5309." });
    expect((await other.chat("pii_middleware", "call 867-5309")).answer).toBe("Left at [REDACTED_PHONE_NUMBER].");
    expect(JSON.stringify(other.llm.requests[0]!.body)).toContain("call 867-5309");
    await other.close();
  });

  it("block fails the agent's run with an error naming the middleware", async () => {
    const blocking = await MiddlewareNetworks.start({
      blocking: prankster.replace('"strategy": "redact"', '"strategy": "block"'),
    });
    blocking.llm.enqueue({ text: "Left at 867-5309." });
    await expect(blocking.chat("blocking", "hi")).rejects.toThrow(
      "the middleware PIIMiddleware[phone_number] failed in after_model: PIIDetectionError: Detected 1 instance(s) of phone_number in text content",
    );
    await blocking.close();
  });
});
