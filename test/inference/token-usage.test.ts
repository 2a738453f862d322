import { describe, expect, it } from "vitest";
import { usageIn } from "../../src/inference/token-usage.js";

const body = (json: unknown) => Buffer.from(JSON.stringify(json, null, 1));

describe("a completion's usage, read from its body", () => {
  it("reads the usage object alone, nested details and all", () => {
    const completion = {
      id: "c",
      choices: [{ message: { role: "assistant", content: 'a "usage": {"prompt_tokens": 999} quoted in the text' } }],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, prompt_tokens_details: { cached_tokens: 3 } },
    };
    expect(usageIn(body(completion))).toEqual({ promptTokens: 12, completionTokens: 5, totalTokens: 17 });
  });

  it("finds none in a body without usage, with usage null, or cut short", () => {
    expect(usageIn(body({ choices: [] }))).toBeUndefined();
    expect(usageIn(body({ choices: [], usage: null }))).toBeUndefined();
    expect(usageIn(Buffer.from('{"usage": {"prompt_tokens": 3'))).toBeUndefined();
  });

  it("adds prompt and completion tokens when the total is missing", () => {
    expect(usageIn(body({ usage: { prompt_tokens: 2, completion_tokens: 3 } }))).toEqual({ promptTokens: 2, completionTokens: 3, totalTokens: 5 });
  });
});
