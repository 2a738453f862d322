import type { JsonObject } from "@bufbuild/protobuf";
import type { FieldViolation } from "../errors.js";
import type { NativeCall } from "../operations/native-calls.js";
import type { NativeOperation } from "../operations/providers/native.js";
import type { Presentation } from "../operations/providers/provider.js";
import type { ClassifiedUpdate } from "./push-classes.js";
import type { GitRepository } from "./repository.js";

/** Every operation a Git route asks policy about. */
export const GIT_OPERATIONS = [
  "git.fetch",
  "git.push.fast_forward",
  "git.push.branch_create",
  "git.push.force",
  "git.ref.delete",
  "git.tag.create",
  "git.tag.update",
  "git.lfs.read",
  "git.lfs.write",
] as const;

export type GitOperation = (typeof GIT_OPERATIONS)[number];

const PUSH_WORDS: Record<string, string> = {
  "git.push.fast_forward": "fast-forward",
  "git.push.branch_create": "new branch",
  "git.push.force": "force (history rewrite)",
  "git.ref.delete": "delete",
  "git.tag.create": "new tag",
  "git.tag.update": "moved tag",
};

/** What policy patterns and grants match: `{kind: "repo", host, owner, name}`, with the updated refs for a push. */
export function repositoryTarget(repository: GitRepository, refs?: readonly string[]): JsonObject {
  const target: JsonObject = { kind: "repo", host: repository.host.name, owner: repository.owner, name: repository.name };
  if (refs !== undefined) target.refs = [...refs];
  return target;
}

/**
 * A push as one call: each ref update decided on its own (a deny of any refuses the push), the push as a whole waiting
 * or spending a grant as its most demanding update, with every update and its class in the detail.
 */
export function pushCall(clientId: string, repository: GitRepository, operation: GitOperation, updates: readonly ClassifiedUpdate[], atomic: boolean, bodyBytes: number | undefined): NativeCall {
  const call: NativeCall = {
    clientId,
    operation,
    target: repositoryTarget(repository, updates.map((update) => update.ref)),
    parts: updates.map((update) => ({ operation: update.operation, target: repositoryTarget(repository, [update.ref]) })),
    detail: {
      updates: updates.map((update) => ({ ref: update.ref, old: update.oldId, new: update.newId, class: update.operation })),
      atomic,
    },
    summary: `git push to ${repositoryLabel(repository)}: ${updates.map((update) => `${shortRef(update.ref)} (${PUSH_WORDS[update.operation]})`).join(", ")}`.slice(0, 500),
  };
  if (bodyBytes !== undefined) call.attributes = { body_bytes: bodyBytes };
  return call;
}

/** A fetch (ref advertisement or upload-pack), or the ref advertisement a push starts with. */
export function fetchCall(clientId: string, repository: GitRepository, service: string): NativeCall {
  return { clientId, operation: "git.fetch", target: repositoryTarget(repository), detail: { service }, summary: `git fetch from ${repositoryLabel(repository)}` };
}

/** An LFS batch of downloads (git.lfs.read) or uploads (git.lfs.write), or a lock request. */
export function lfsCall(clientId: string, repository: GitRepository, operation: "git.lfs.read" | "git.lfs.write", detail: JsonObject, summary: string): NativeCall {
  return { clientId, operation, target: repositoryTarget(repository), detail, summary: `${summary} in ${repositoryLabel(repository)}`.slice(0, 500) };
}

function repositoryLabel(repository: GitRepository): string {
  return `${repository.host.name}/${repository.owner}/${repository.name}`;
}

function shortRef(ref: string): string {
  return ref.replace(/^refs\/(?:heads|tags)\//, "");
}

/** The operations as providers register them: grants for them are validated, and operators shown them, by these. */
export const gitNativeOperations: NativeOperation[] = GIT_OPERATIONS.map((operation) => ({
  operation,
  validateTarget: (target) => validateRepositoryTarget(target, operation.startsWith("git.push") || operation === "git.ref.delete" || operation.startsWith("git.tag")),
  present: (target, detail) => present(operation, target, detail),
}));

function validateRepositoryTarget(target: JsonObject, takesRefs: boolean): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (target.kind !== "repo") violations.push({ field: "target.kind", description: 'must be "repo"' });
  for (const field of ["host", "owner", "name"]) {
    const value = target[field];
    if (typeof value !== "string" || value === "" || value.length > 200) violations.push({ field: `target.${field}`, description: "must be a non-empty string" });
  }
  const refs = target.refs;
  if (refs !== undefined) {
    if (!takesRefs) violations.push({ field: "target.refs", description: "only push operations name refs" });
    else if (!Array.isArray(refs) || refs.length === 0 || refs.some((ref) => typeof ref !== "string" || !ref.startsWith("refs/"))) {
      violations.push({ field: "target.refs", description: "must be a non-empty list of full ref names (refs/heads/...)" });
    }
  }
  const known = new Set(["kind", "host", "owner", "name", "refs"]);
  for (const field of Object.keys(target)) if (!known.has(field)) violations.push({ field: `target.${field}`, description: "is not a field of a repository target" });
  return violations;
}

function present(operation: GitOperation, target: JsonObject, detail: JsonObject): Presentation {
  const repository = `${String(target.host)}/${String(target.owner)}/${String(target.name)}`;
  const updates = Array.isArray(detail.updates) ? (detail.updates as JsonObject[]) : [];
  if (updates.length > 0) {
    const lines = updates.map((update) => `${String(update.ref)} ${abbreviated(update.old)}..${abbreviated(update.new)} ${PUSH_WORDS[String(update.class)] ?? String(update.class)}`);
    return { title: `git push to ${repository} (${PUSH_WORDS[operation] ?? operation})`.slice(0, 160), summary: lines.join("; ").slice(0, 500) };
  }
  const refs = Array.isArray(target.refs) ? ` ${(target.refs as string[]).join(", ")}` : "";
  const words: Record<string, string> = { "git.fetch": "git fetch from", "git.lfs.read": "Git LFS download from", "git.lfs.write": "Git LFS upload to" };
  return { title: `${words[operation] ?? `${operation} on`} ${repository}${refs}`.slice(0, 160), summary: `${operation} on ${repository}${refs}`.slice(0, 500) };
}

function abbreviated(id: unknown): string {
  return typeof id === "string" ? (/^0+$/.test(id) ? "(none)" : id.slice(0, 12)) : "?";
}
