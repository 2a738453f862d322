// A service with the http rule shapes neuro-san's protos do not use (nested and multi-segment
// variables, a body field, query parameters, additional bindings), built from descriptors at runtime
// so the transcoder is tested as the generic google.api.http implementation it claims to be.
import { create, createFileRegistry, setExtension, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import {
  DescriptorProtoSchema,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { http } from "../../src/gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../src/gen/google/api/http_pb.js";

type FieldSpec = [name: string, number: number, type: FieldDescriptorProto_Type | string, repeated?: boolean];
type RuleInit = MessageInitShape<typeof HttpRuleSchema>;

const { STRING: string, INT32: int32, INT64: int64, BOOL: bool, BYTES: bytes } = FieldDescriptorProto_Type;

function message(name: string, fields: FieldSpec[]): MessageInitShape<typeof DescriptorProtoSchema> {
  return {
    name,
    field: fields.map(([fieldName, number, type, repeated]) => ({
      name: fieldName,
      number,
      jsonName: fieldName,
      label: repeated ? FieldDescriptorProto_Label.REPEATED : FieldDescriptorProto_Label.OPTIONAL,
      ...(typeof type === "string"
        ? { type: type === ".axon.test.Kind" ? FieldDescriptorProto_Type.ENUM : FieldDescriptorProto_Type.MESSAGE, typeName: type }
        : { type }),
    })),
  };
}

function options(rule: RuleInit) {
  const methodOptions = create(MethodOptionsSchema);
  setExtension(methodOptions, http, create(HttpRuleSchema, rule));
  return methodOptions;
}

/** `axon.test.Library`, with the given rule for GetBook (to test rules that must be refused). */
export function libraryService(getBookRule: RuleInit = defaultGetBookRule): DescService {
  const file = create(FileDescriptorProtoSchema, {
    name: "axon/test/library.proto",
    package: "axon.test",
    syntax: "proto3",
    enumType: [{ name: "Kind", value: [{ name: "KIND_UNSPECIFIED", number: 0 }, { name: "NOVEL", number: 1 }, { name: "POETRY", number: 2 }] }],
    messageType: [
      message("Book", [
        ["name", 1, string],
        ["title", 2, string],
        ["kind", 3, ".axon.test.Kind"],
        ["tags", 4, string, true],
        ["pages", 5, int32],
        ["draft", 6, bool],
        ["isbn", 7, int64],
        ["cover", 8, bytes],
        ["sequel", 9, ".axon.test.Book"],
      ]),
      message("GetBookRequest", [["name", 1, string]]),
      message("UpdateBookRequest", [
        ["book", 1, ".axon.test.Book"],
        ["notify", 2, bool],
      ]),
      message("Filter", [
        ["kind", 1, ".axon.test.Kind"],
        ["min_pages", 2, int64],
      ]),
      message("ListBooksRequest", [
        ["shelf", 1, string],
        ["page_size", 2, int32],
        ["tags", 3, string, true],
        ["include_drafts", 4, bool],
        ["filter", 5, ".axon.test.Filter"],
        ["pages", 6, int32, true],
      ]),
      message("ListBooksResponse", [
        ["books", 1, ".axon.test.Book", true],
        ["request", 2, ".axon.test.ListBooksRequest"],
      ]),
    ],
    service: [
      {
        name: "Library",
        method: [
          { name: "GetBook", inputType: ".axon.test.GetBookRequest", outputType: ".axon.test.Book", options: options(getBookRule) },
          {
            name: "UpdateBook",
            inputType: ".axon.test.UpdateBookRequest",
            outputType: ".axon.test.Book",
            options: options({ pattern: { case: "patch", value: "/v1/{book.name=shelves/*/books/*}" }, body: "book" }),
          },
          {
            name: "ListBooks",
            inputType: ".axon.test.ListBooksRequest",
            outputType: ".axon.test.ListBooksResponse",
            options: options({ pattern: { case: "get", value: "/v1/shelves/{shelf}/books" } }),
          },
          { name: "Unrouted", inputType: ".axon.test.GetBookRequest", outputType: ".axon.test.Book" },
        ],
      },
    ],
  });
  return createFileRegistry(file, () => undefined).getService("axon.test.Library")!;
}

const defaultGetBookRule: RuleInit = {
  pattern: { case: "get", value: "/v1/{name=shelves/*/books/*}" },
  additionalBindings: [{ pattern: { case: "get", value: "/v1/books/{name}:peek" } }],
};
