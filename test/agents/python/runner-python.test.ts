import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { projectRoot } from "../../support/server.js";

it("runner.py's own Python tests pass under the machine's python3", async () => {
  const { stderr } = await promisify(execFile)("python3", ["test/agents/python/test_runner.py", "-v"], { cwd: projectRoot });
  expect(stderr).toMatch(/\nOK\n/);
});
