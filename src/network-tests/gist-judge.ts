import type { LlmClient } from "../llm/llm.js";

export interface GistVerdict {
  conveys: boolean;
  /** The judge's own words, for the report. */
  explanation: string;
}

const INSTRUCTIONS = [
  "You check answers given by an AI agent.",
  "Decide whether the answer conveys the given gist: the same meaning, in any wording.",
  "Reply with YES or NO on the first line and one short sentence of reasoning on the second.",
].join(" ");

/** Asks the judge whether `answer` conveys `gist`; a reply that is neither yes nor no is an error, not a verdict. */
export async function judgeGist(judge: LlmClient, answer: string, gist: string, signal: AbortSignal): Promise<GistVerdict> {
  const response = await judge.complete({
    messages: [
      { role: "system", content: INSTRUCTIONS },
      { role: "user", content: `Gist:\n${gist}\n\nAnswer:\n${answer}` },
    ],
    tools: [],
    signal,
  });
  const verdict = /^\W*(yes|no)\b/i.exec(response.text);
  if (!verdict) throw new Error(`the gist judge (${judge.description}) answered neither yes nor no: ${response.text.slice(0, 200)}`);
  return { conveys: verdict[1]?.toLowerCase() === "yes", explanation: response.text.trim() };
}
