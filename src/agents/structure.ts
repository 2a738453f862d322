import type { JsonObject } from "@bufbuild/protobuf";

const fencedJson = /```(?:json)?\s*\n([\s\S]*?)\n?```/;

/**
 * For `structure_formats: ["json"]`: the JSON object in an answer goes to `structure`. A fenced ```json block
 * wins; otherwise the outermost `{...}` of the text. The text keeps what is left (or stays whole if nothing is).
 */
export function extractStructure(text: string): { text: string; structure?: JsonObject } {
  const fenced = fencedJson.exec(text);
  const candidate = fenced ? { json: fenced[1]!, span: fenced[0] } : outermostObject(text);
  if (!candidate) return { text };
  let parsed: unknown;
  try {
    parsed = JSON.parse(candidate.json);
  } catch {
    return { text };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { text };
  const rest = text.replace(candidate.span, "").trim();
  return { text: rest === "" ? text : rest, structure: parsed as JsonObject };
}

function outermostObject(text: string): { json: string; span: string } | undefined {
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start < 0 || end <= start) return undefined;
  const span = text.slice(start, end + 1);
  return { json: span, span };
}
