import os from "node:os";

/** What a bench's figures were measured on: the cores, the CPU, the kernel and the Node.js release, which moves them too. */
export function machine(): string {
  const model = os.cpus()[0]?.model.trim() ?? "unknown CPU";
  return `${os.availableParallelism()} × ${model}, ${os.platform()} ${os.release()}, Node ${process.version}`;
}
