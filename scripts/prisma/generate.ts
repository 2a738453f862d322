// Renders prisma/<provider>/schema.prisma from prisma/models.prisma and generates each provider's client into
// src/gen/prisma/<provider>. `--check` only verifies that the committed schema files are current (exit 1 if not).
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { projectRoot } from "../../src/project-root.js";
import { modelsFile, providers, renderSchema, schemaFile } from "../../src/store/schema-files.js";

const check = process.argv.includes("--check");
const models = await readFile(modelsFile, "utf8");
let stale = 0;

for (const provider of providers) {
  const file = schemaFile(provider);
  const wanted = renderSchema(provider, models);
  const current = await readFile(file, "utf8").catch(() => undefined);
  const relative = path.relative(projectRoot, file);
  if (current !== wanted) {
    if (check) {
      console.error(`${relative} is not current with prisma/models.prisma: run npm run prisma:generate`);
      stale++;
      continue;
    }
    await writeFile(file, wanted);
    console.log(`wrote ${relative}`);
  }
  if (!check) {
    // The CLI fetches a native schema engine before any command unless told where one is; generation never uses it.
    execFileSync(path.join(projectRoot, "node_modules", ".bin", "prisma"), ["generate", "--schema", file], {
      cwd: projectRoot,
      stdio: "inherit",
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: "/bin/true", PRISMA_HIDE_UPDATE_MESSAGE: "1", CHECKPOINT_DISABLE: "1" },
    });
  }
}
process.exitCode = stale > 0 ? 1 : 0;
