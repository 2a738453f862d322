import type { DescField, DescMessage } from "@bufbuild/protobuf";

/**
 * Resolves a dotted field path (`user_message.text`) through singular message fields. Each part may be
 * the proto name or the JSON name, as protobuf JSON accepts both. Undefined when any part is unknown or
 * a part before the last is not a singular message.
 */
export function resolveFieldPath(message: DescMessage, path: readonly string[]): DescField[] | undefined {
  const fields: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const part of path) {
    if (current === undefined) return undefined;
    const field = findField(current, part);
    if (field === undefined) return undefined;
    fields.push(field);
    current = field.fieldKind === "message" ? field.message : undefined;
  }
  return fields;
}

export function findField(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((field) => field.name === name || field.jsonName === name);
}

/** True for well-known types whose JSON is not an object of their fields (Struct, Timestamp, wrappers...). */
export function hasSpecialJson(message: DescMessage): boolean {
  return message.typeName.startsWith("google.protobuf.") && message.file.name.startsWith("google/protobuf/");
}
