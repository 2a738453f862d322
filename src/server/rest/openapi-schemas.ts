import { ScalarType, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";

/** A JSON Schema object as OpenAPI 3.0 uses it. */
export type SchemaObject = Record<string, unknown>;

/**
 * Builds `components.schemas` from message descriptors, describing canonical protobuf JSON as Axon
 * writes it: JSON field names, 64-bit integers as strings, bytes as base64, enums by name, and the
 * well-known types in their special JSON forms. Each message and enum becomes one named schema
 * (its full protobuf name), referenced wherever it is used, so recursive messages stay finite.
 */
export class SchemaCollector {
  readonly schemas: Record<string, SchemaObject> = {};

  /** A `$ref` to the message's schema (or the inline form of a well-known type). */
  messageSchema(message: DescMessage): SchemaObject {
    const wellKnown = wellKnownSchema(message.typeName);
    if (wellKnown !== undefined) return wellKnown;
    if (!(message.typeName in this.schemas)) {
      const properties: Record<string, SchemaObject> = {};
      // Registered before its fields are visited, so a field of its own type finds it.
      this.schemas[message.typeName] = { type: "object", properties };
      for (const field of message.fields) properties[field.jsonName] = this.fieldSchema(field);
    }
    return ref(message.typeName);
  }

  fieldSchema(field: DescField): SchemaObject {
    switch (field.fieldKind) {
      case "scalar":
        return scalarSchema(field.scalar);
      case "enum":
        return this.enumSchema(field.enum);
      case "message":
        return this.messageSchema(field.message);
      case "list":
        return { type: "array", items: this.elementSchema(field) };
      case "map":
        return { type: "object", additionalProperties: this.elementSchema(field) };
    }
  }

  enumSchema(desc: DescEnum): SchemaObject {
    if (desc.typeName === "google.protobuf.NullValue") return { nullable: true, enum: [null] };
    this.schemas[desc.typeName] ??= { type: "string", enum: desc.values.map((value) => value.name) };
    return ref(desc.typeName);
  }

  /** The schema of one element of a list, or one value of a map. */
  private elementSchema(field: DescField): SchemaObject {
    if (field.message !== undefined) return this.messageSchema(field.message);
    if (field.enum !== undefined) return this.enumSchema(field.enum);
    return scalarSchema(field.scalar ?? ScalarType.STRING);
  }
}

export function scalarSchema(scalar: ScalarType): SchemaObject {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", format: "byte" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0, maximum: 4294967295 };
    // 64-bit integers do not fit a JSON number exactly; protobuf JSON writes them as strings.
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64" };
  }
}

function wellKnownSchema(typeName: string): SchemaObject | undefined {
  switch (typeName) {
    case "google.protobuf.Struct":
      return { type: "object", additionalProperties: true };
    case "google.protobuf.Value":
      return { description: "Any JSON value." };
    case "google.protobuf.ListValue":
      return { type: "array", items: {} };
    case "google.protobuf.Timestamp":
      return { type: "string", format: "date-time" };
    case "google.protobuf.Duration":
      return { type: "string", description: "Seconds with up to 9 fractional digits and an \"s\" suffix, e.g. \"1.5s\"." };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Comma-separated field paths." };
    case "google.protobuf.Empty":
      return { type: "object" };
    case "google.protobuf.Any":
      return {
        type: "object",
        properties: { "@type": { type: "string", description: "type.googleapis.com/ and the full name of the message." } },
        required: ["@type"],
        additionalProperties: true,
      };
    case "google.protobuf.DoubleValue":
      return { ...scalarSchema(ScalarType.DOUBLE), nullable: true };
    case "google.protobuf.FloatValue":
      return { ...scalarSchema(ScalarType.FLOAT), nullable: true };
    case "google.protobuf.Int64Value":
      return { ...scalarSchema(ScalarType.INT64), nullable: true };
    case "google.protobuf.UInt64Value":
      return { ...scalarSchema(ScalarType.UINT64), nullable: true };
    case "google.protobuf.Int32Value":
      return { ...scalarSchema(ScalarType.INT32), nullable: true };
    case "google.protobuf.UInt32Value":
      return { ...scalarSchema(ScalarType.UINT32), nullable: true };
    case "google.protobuf.BoolValue":
      return { ...scalarSchema(ScalarType.BOOL), nullable: true };
    case "google.protobuf.StringValue":
      return { ...scalarSchema(ScalarType.STRING), nullable: true };
    case "google.protobuf.BytesValue":
      return { ...scalarSchema(ScalarType.BYTES), nullable: true };
    default:
      return undefined;
  }
}

function ref(name: string): SchemaObject {
  return { $ref: `#/components/schemas/${name}` };
}
