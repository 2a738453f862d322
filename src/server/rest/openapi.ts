import type { DescField, DescMessage, DescService } from "@bufbuild/protobuf";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { findField, hasSpecialJson, resolveFieldPath } from "./field-path.js";
import { readRestBindings, type RestRoute } from "./http-rule.js";
import { jsonLinesContentType } from "./json-lines-writer.js";
import { SchemaCollector, type SchemaObject } from "./openapi-schemas.js";
import type { PathTemplate } from "./path-template.js";

const openApiMethods = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/**
 * The OpenAPI 3.0 document of the REST surface, derived from the same http rules and descriptors the
 * transcoder serves, so the two cannot disagree.
 */
export function buildOpenApi(services: readonly DescService[], info: { title: string; version: string }): object {
  const schemas = new SchemaCollector();
  const statusRef = schemas.messageSchema(StatusSchema);
  const paths: Record<string, Record<string, unknown>> = {};
  const operationIds = new Set<string>();

  for (const route of readRestBindings(services)) {
    const verb = route.httpMethod.toLowerCase();
    if (!openApiMethods.has(verb)) continue;
    const { method } = route;
    const operationId = uniqueId(`${method.parent.name}_${method.name}`, operationIds);
    const streaming = method.methodKind === "server_streaming";
    const responseField = method.output.fields.find((field) => field.name === route.responseBody);
    const responseMessage = responseField?.message ?? method.output;
    const responseSchema = schemas.messageSchema(responseMessage);

    const operation: Record<string, unknown> = {
      operationId,
      tags: [method.parent.name],
      parameters: [...pathParameters(route, schemas), ...queryParameters(route, schemas)],
      responses: {
        "200": streaming
          ? {
              description:
                `A stream of ${method.output.name}, one JSON object per line. An error after the stream ` +
                "started arrives as one more line holding a google.rpc.Status.",
              content: { [jsonLinesContentType]: { schema: responseSchema } },
            }
          : { description: `A ${responseMessage.name}.`, content: { "application/json": { schema: responseSchema } } },
        default: { description: "An error, as a google.rpc.Status.", content: { "application/json": { schema: statusRef } } },
      },
    };
    const body = requestBodySchema(route, schemas);
    if (body !== undefined) operation.requestBody = { required: false, content: { "application/json": { schema: body } } };
    if (method.deprecated) operation.deprecated = true;

    (paths[openApiPath(route.pathTemplate)] ??= {})[verb] = operation;
  }

  return {
    openapi: "3.0.3",
    info,
    tags: services.map((service) => ({ name: service.name, description: service.typeName })),
    paths,
    components: { schemas: schemas.schemas },
  };
}

/** `/v1/{name=shelves/*}:get` becomes `/v1/{name}:get`: OpenAPI has no multi-segment parameters. */
export function openApiPath(template: PathTemplate): string {
  const parts: string[] = [];
  for (let index = 0; index < template.segments.length; index++) {
    const variable = template.variables.find((candidate) => candidate.start === index);
    if (variable !== undefined) {
      parts.push(`{${variable.fieldPath.join(".")}}`);
      index = variable.end - 1;
      continue;
    }
    const segment = template.segments[index]!;
    parts.push(segment.kind === "literal" ? segment.value : segment.kind === "segment" ? "*" : "**");
  }
  return `/${parts.join("/")}${template.verb === undefined ? "" : `:${template.verb}`}`;
}

function pathParameters(route: RestRoute, schemas: SchemaCollector): object[] {
  return route.pathTemplate.variables.map((variable) => {
    const fields = resolveFieldPath(route.method.input, variable.fieldPath)!;
    return { name: variable.fieldPath.join("."), in: "path", required: true, schema: schemas.fieldSchema(fields[fields.length - 1]!) };
  });
}

// Every field the path and the body leave free, by dotted path, as the transcoder reads them.
function queryParameters(route: RestRoute, schemas: SchemaCollector): object[] {
  if (route.body === "*") return [];
  const bound = new Set(
    route.pathTemplate.variables.map((variable) =>
      resolveFieldPath(route.method.input, variable.fieldPath)!
        .map((field) => field.jsonName)
        .join("."),
    ),
  );
  const bodyField = route.body === "" ? undefined : findField(route.method.input, route.body);
  const parameters: object[] = [];

  const visit = (message: DescMessage, prefix: string, seen: ReadonlySet<DescMessage>): void => {
    for (const field of message.fields) {
      const name = prefix + field.jsonName;
      if (field === bodyField || bound.has(name)) continue;
      if (field.fieldKind === "message" && !hasSpecialJson(field.message)) {
        if (!seen.has(field.message)) visit(field.message, `${name}.`, new Set([...seen, field.message]));
        continue;
      }
      if (!isQueryable(field)) continue;
      const schema = schemas.fieldSchema(field);
      parameters.push(field.fieldKind === "list" ? { name, in: "query", schema, explode: true } : { name, in: "query", schema });
    }
  };
  visit(route.method.input, "", new Set([route.method.input]));
  return parameters;
}

// A query value is text: scalars, enums, lists of them, and well-known types written as one string.
function isQueryable(field: DescField): boolean {
  if (field.fieldKind === "map") return false;
  const message = field.message;
  if (message === undefined) return true;
  if (field.fieldKind === "list") return false;
  return !["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.Any", "google.protobuf.Empty"].includes(
    message.typeName,
  );
}

function requestBodySchema(route: RestRoute, schemas: SchemaCollector): SchemaObject | undefined {
  if (route.body === "") return undefined;
  if (route.body === "*") return schemas.messageSchema(route.method.input);
  return schemas.fieldSchema(findField(route.method.input, route.body)!);
}

function uniqueId(base: string, taken: Set<string>): string {
  let id = base;
  for (let suffix = 1; taken.has(id); suffix++) id = `${base}_${suffix}`;
  taken.add(id);
  return id;
}
