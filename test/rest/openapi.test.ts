import { describe, expect, it } from "vitest";
import { restServices } from "../../src/server/descriptors.js";
import { compileRestRoutes } from "../../src/server/rest/http-rule.js";
import { buildOpenApi, openApiPath } from "../../src/server/rest/openapi.js";
import { libraryService } from "./library-service.js";

interface Operation {
  operationId: string;
  tags: string[];
  parameters: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content: Record<string, { schema: unknown }> }>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { type?: string; properties?: Record<string, Record<string, unknown>>; enum?: string[] }> };
}

const document = (services = restServices) => buildOpenApi(services, { title: "Axon", version: "1" }) as Document;

function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => refsIn(item, found));
  else if (typeof value === "object" && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string") found.push(inner);
      else refsIn(inner, found);
    }
  }
  return found;
}

describe("the OpenAPI document", () => {
  it("has one operation for every http rule, named Service_Method and tagged by service", () => {
    const doc = document();
    expect(doc.openapi).toMatch(/^3\./);
    for (const route of compileRestRoutes(restServices)) {
      const operation = doc.paths[openApiPath(route.pathTemplate)]?.[route.httpMethod.toLowerCase()];
      expect(operation, route.template).toBeDefined();
      expect(operation!.operationId).toBe(`${route.method.parent.name}_${route.method.name}`);
      expect(operation!.tags).toEqual([route.method.parent.name]);
      expect(operation!.responses.default!.content["application/json"]!.schema).toEqual({ $ref: "#/components/schemas/google.rpc.Status" });
    }
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/.well-known/unyolo-agent",
      "/api/agent/v1/operations",
      "/api/agent/v1/operations/{id}",
      "/api/agent/v1/operations/{id}/cancel",
      "/api/agent/v1/operations/{id}/events",
      "/api/grants",
      "/api/grants/{id}",
      "/api/networks/v1/temporary",
      "/api/networks/v1/temporary/{name}",
      "/api/operator/v1/requests",
      "/api/operator/v1/requests/{id}",
      "/api/operator/v1/requests/{id}/approve",
      "/api/operator/v1/requests/{id}/deny",
      "/api/operator/v1/requests/{id}/revoke",
      "/api/v1/list",
      "/api/v1/{agent_name}/connectivity",
      "/api/v1/{agent_name}/function",
      "/api/v1/{agent_name}/streaming_chat",
    ]);
  });

  it("every $ref resolves to a component schema", () => {
    for (const doc of [document(), document([libraryService()])]) {
      const refs = refsIn(doc);
      expect(refs.length).toBeGreaterThan(0);
      for (const ref of refs) {
        expect(ref.startsWith("#/components/schemas/"), ref).toBe(true);
        expect(doc.components.schemas[ref.slice("#/components/schemas/".length)], ref).toBeDefined();
      }
    }
  });

  it("every path variable is a required path parameter", () => {
    const doc = document([...restServices, libraryService()]);
    for (const [path, operations] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((found) => found[1]);
      for (const operation of Object.values(operations)) {
        const inPath = operation.parameters.filter((parameter) => parameter.in === "path");
        expect(inPath.map((parameter) => parameter.name)).toEqual(names);
        expect(inPath.every((parameter) => parameter.required)).toBe(true);
      }
    }
  });

  it("streaming_chat takes a ChatRequest body and answers json-lines of ChatResponse", () => {
    const chat = document().paths["/api/v1/{agent_name}/streaming_chat"]!.post!;
    expect(chat.requestBody!.content["application/json"]!.schema).toEqual({
      $ref: "#/components/schemas/dev.cognizant_ai.neuro_san.api.grpc.agent.ChatRequest",
    });
    expect(chat.responses["200"]!.content["application/json-lines"]!.schema).toEqual({
      $ref: "#/components/schemas/dev.cognizant_ai.neuro_san.api.grpc.agent.ChatResponse",
    });
    expect(chat.parameters.filter((parameter) => parameter.in === "query")).toEqual([]);
  });

  it("schemas use JSON names and describe protobuf JSON: enums by name, Struct as object, recursion by reference", () => {
    const { schemas } = document().components;
    const message = schemas["dev.cognizant_ai.neuro_san.api.grpc.chat.ChatMessage"]!;
    expect(Object.keys(message.properties!)).toEqual([
      "type",
      "text",
      "mime_data",
      "origin",
      "structure",
      "chat_context",
      "tool_result_origin",
      "sly_data",
    ]);
    expect(message.properties!.mime_data).toEqual({
      type: "array",
      items: { $ref: "#/components/schemas/dev.cognizant_ai.neuro_san.api.grpc.mime_data.MimeData" },
    });
    expect(message.properties!.structure).toEqual({ type: "object", additionalProperties: true });
    expect(schemas["dev.cognizant_ai.neuro_san.api.grpc.chat.ChatMessage.ChatMessageType"]!.enum).toContain("AGENT_FRAMEWORK");
    expect(schemas["dev.cognizant_ai.neuro_san.api.grpc.mime_data.MimeData"]!.properties!.mime_bytes).toEqual({ type: "string", format: "byte" });
    expect(schemas["google.rpc.Status"]!.properties!.details).toMatchObject({ type: "array", items: { required: ["@type"] } });
  });

  it("int64 is a string, and the query parameters of a GET are the request fields the path leaves free", () => {
    const doc = document([libraryService()]);
    expect(doc.components.schemas["axon.test.Book"]!.properties!.isbn).toEqual({ type: "string", format: "int64" });
    const list = doc.paths["/v1/shelves/{shelf}/books"]!.get!;
    expect(list.parameters.filter((parameter) => parameter.in === "query").map((parameter) => parameter.name)).toEqual([
      "page_size",
      "tags",
      "include_drafts",
      "filter.kind",
      "filter.min_pages",
      "pages",
    ]);
    const update = doc.paths["/v1/{book.name}"]!.patch!;
    expect(update.requestBody!.content["application/json"]!.schema).toEqual({ $ref: "#/components/schemas/axon.test.Book" });
    expect(update.parameters.map((parameter) => `${parameter.in}:${parameter.name}`)).toEqual(["path:book.name", "query:notify"]);
    expect(doc.paths["/v1/books/{name}:peek"]!.get!.operationId).toBe("Library_GetBook_1");
  });
});
