import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { Function as AgentFunction } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { element } from "./dom.js";

/**
 * What a network takes, from its Function: the parameters its front man reads from the message, the sly_data it
 * expects (calc-style networks need their operands there) and the sly_data it gives back. Null when it declares none.
 */
export function functionDetails(fn: AgentFunction | undefined): HTMLElement | null {
  const tables = [
    schemaTable("Parameters", "what to say in the message", fn?.parameters),
    schemaTable("sly_data it reads", "put these in sly_data", fn?.slyDataSchema),
    schemaTable("sly_data it returns", "", fn?.slyDataOutputSchema),
  ].filter((table): table is HTMLElement => table !== null);
  if (tables.length === 0 && !fn?.description) return null;
  return element("div", { class: "function-details" }, fn?.description ? element("p", {}, fn.description) : null, ...tables);
}

function schemaTable(caption: string, hint: string, schema: JsonObject | undefined): HTMLElement | null {
  const properties = propertiesOf(schema);
  if (properties.length === 0) return null;
  const required = new Set(requiredOf(schema));
  return element(
    "table",
    { class: "schema" },
    element("caption", {}, caption, hint && element("span", { class: "muted" }, ` · ${hint}`)),
    element("thead", {}, element("tr", {}, element("th", { scope: "col" }, "name"), element("th", { scope: "col" }, "type"), element("th", { scope: "col" }, "description"))),
    element(
      "tbody",
      {},
      ...properties.map(([name, property]) =>
        element(
          "tr",
          {},
          element("td", { class: "mono" }, name, required.has(name) && element("abbr", { class: "required", title: "required" }, "*")),
          element("td", {}, typeOf(property)),
          element("td", {}, typeof property["description"] === "string" ? property["description"] : ""),
        ),
      ),
    ),
  );
}

/** A sly_data object to start from: each property of the schema with an empty value of its type. */
export function slyDataTemplate(schema: JsonObject | undefined): JsonObject | undefined {
  const properties = propertiesOf(schema);
  if (properties.length === 0) return undefined;
  const empty = (property: JsonObject): JsonValue => {
    switch (property["type"]) {
      case "number":
      case "integer":
        return 0;
      case "boolean":
        return false;
      case "array":
        return [];
      case "object":
        return {};
      default:
        return "";
    }
  };
  return Object.fromEntries(properties.map(([name, property]) => [name, empty(property)]));
}

/** `metadata.sample_queries`, as neuro-san networks list them (strings only). */
export function sampleQueries(metadata: JsonObject | undefined): string[] {
  const samples = metadata?.["sample_queries"];
  return Array.isArray(samples) ? samples.filter((sample): sample is string => typeof sample === "string" && sample.trim() !== "") : [];
}

function propertiesOf(schema: JsonObject | undefined): [string, JsonObject][] {
  const properties = schema?.["properties"];
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return [];
  return Object.entries(properties).filter((entry): entry is [string, JsonObject] => typeof entry[1] === "object" && entry[1] !== null && !Array.isArray(entry[1]));
}

function requiredOf(schema: JsonObject | undefined): string[] {
  const required = schema?.["required"];
  return Array.isArray(required) ? required.filter((name): name is string => typeof name === "string") : [];
}

function typeOf(property: JsonObject): string {
  const choices = property["enum"];
  return Array.isArray(choices) ? choices.map(String).join(" | ") : typeof property["type"] === "string" ? property["type"] : "";
}
