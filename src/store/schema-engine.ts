import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import type { SchemaEngine } from "@prisma/schema-engine-wasm";

type Bindings = typeof import("@prisma/schema-engine-wasm/schema_engine_bg");

let bindings: Promise<Bindings> | undefined;

/** The part of the WebAssembly global used here (@types/node 20 does not declare it; Node 20 has it). */
interface WebAssemblyApi {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: Record<string, object>): Promise<{ exports: Record<string, unknown> }>;
}
const { WebAssembly } = globalThis as unknown as { WebAssembly: WebAssemblyApi };

/**
 * Prisma's schema engine compiled to WebAssembly: the migration engine without the native binary the CLI would download.
 * The package's entry point imports the .wasm file as an ES module, which Node 20 cannot do, so the module is
 * instantiated here against the package's own JS glue, once per process.
 */
function loadBindings(): Promise<Bindings> {
  bindings ??= (async () => {
    const glue: Bindings = await import("@prisma/schema-engine-wasm/schema_engine_bg");
    const gluePath = createRequire(import.meta.url).resolve("@prisma/schema-engine-wasm/schema_engine_bg");
    const wasmPath = gluePath.replace(/\.js$/, ".wasm");
    const module = await WebAssembly.compile(await readFile(wasmPath));
    const instance = await WebAssembly.instantiate(module, { "./schema_engine_bg.js": glue });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return glue;
  })();
  return bindings;
}

/**
 * Runs `use` with a schema engine connected through a driver adapter, then frees the engine and closes the connections
 * it opened: freeing alone leaves them open, and an open one keeps an SQLite file locked.
 * `datamodel`, when given, is the schema the engine's datamodel-based commands see.
 */
export async function withSchemaEngine<T>(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  use: (engine: SchemaEngine) => Promise<T>,
  datamodel?: string,
): Promise<T> {
  const { SchemaEngine } = await loadBindings();
  const opened: SqlDriverAdapter[] = [];
  const tracked: SqlMigrationAwareDriverAdapterFactory = {
    provider: adapterFactory.provider,
    adapterName: adapterFactory.adapterName,
    connect: async () => remember(await adapterFactory.connect()),
    connectToShadowDb: async () => remember(await adapterFactory.connectToShadowDb()),
  };
  function remember(adapter: SqlDriverAdapter): SqlDriverAdapter {
    opened.push(adapter);
    return adapter;
  }
  const engine = await SchemaEngine.new(
    { datamodels: datamodel === undefined ? undefined : [["schema.prisma", datamodel]] },
    () => {}, // the engine's own tracing lines; errors come back as rejections
    bindMigrationAwareSqlAdapterFactory(tracked),
  );
  try {
    return await use(engine);
  } finally {
    engine.free();
    await Promise.allSettled(opened.map((adapter) => adapter.dispose()));
  }
}
