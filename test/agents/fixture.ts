import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

/** A throwaway folder of network files; paths are relative to it. */
export class NetworkFolder {
  private constructor(readonly root: string) {}

  static async create(files: Record<string, string> = {}): Promise<NetworkFolder> {
    const folder = new NetworkFolder(await mkdtemp(path.join(tmpdir(), "axon-agents-")));
    await folder.write(files);
    return folder;
  }

  path(relative: string): string {
    return path.join(this.root, relative);
  }

  async write(files: Record<string, string>): Promise<void> {
    for (const [relative, text] of Object.entries(files)) {
      await mkdir(path.dirname(this.path(relative)), { recursive: true });
      await writeFile(this.path(relative), text);
    }
  }

  async remove(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}

/** A minimal valid network: a front man and one LLM helper. */
export function smallNetwork(description: string): string {
  return `
    llm_config { model_name: "gpt-4o-mini" }
    metadata { description: "${description}", tags: ["test"] }
    tools: [
      { name: "Front", function { description: "${description}" }, instructions: "Help.", tools: ["Helper"] }
      { name: "Helper", instructions: "Assist." }
    ]
  `;
}
