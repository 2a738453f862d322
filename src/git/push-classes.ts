import type { PackCommit } from "./pack-commits.js";
import { isZeroId, type RefUpdate } from "./push-commands.js";

/** The policy operation of one ref update. */
export type PushOperation = "git.push.fast_forward" | "git.push.branch_create" | "git.push.force" | "git.ref.delete" | "git.tag.create" | "git.tag.update";

export interface ClassifiedUpdate extends RefUpdate {
  operation: PushOperation;
}

/** From the least to the most demanding: a push is decided as its most demanding update. */
const DEMAND: readonly PushOperation[] = ["git.push.fast_forward", "git.tag.create", "git.push.branch_create", "git.tag.update", "git.ref.delete", "git.push.force"];

export function mostDemanding(updates: readonly ClassifiedUpdate[]): PushOperation {
  return updates.reduce<PushOperation>((most, update) => (DEMAND.indexOf(update.operation) > DEMAND.indexOf(most) ? update.operation : most), "git.push.fast_forward");
}

/** Walking ancestry costs at most this many steps per push; past it, what is not proven yet stays unproven. */
const MAX_PROOF_STEPS = 2_000_000;

interface Proof {
  update: RefUpdate;
  proven: boolean;
  /** Commits reached from the new id. */
  reached: Set<string>;
  /** Reached commits whose parents are not known yet: the pack has not shown them (or never will). */
  waiting: Set<string>;
}

/**
 * Classifies a push's ref updates. Creating, deleting and tag updates follow from the ids and the ref name; a branch
 * moving from one commit to another is a fast-forward only when the pushed pack's commits prove the new commit
 * reaches the old one, and anything unproven is a force push. Proofs grow as the pack's commits arrive, so a push is
 * often `settled` (nothing left to prove) long before its pack has been read.
 */
export class PushClassifier {
  private readonly parents = new Map<string, string[]>();
  private readonly proofs: Proof[] = [];
  private steps = 0;

  constructor(private readonly updates: readonly RefUpdate[]) {
    for (const update of updates) {
      if (fixedOperation(update) === undefined) this.proofs.push({ update, proven: false, reached: new Set([update.newId]), waiting: new Set([update.newId]) });
    }
  }

  /** Whether every update's class is final: nothing is waiting on a proof the pack could still bring. */
  get settled(): boolean {
    return this.proofs.every((proof) => proof.proven);
  }

  addCommit(commit: PackCommit): void {
    this.parents.set(commit.id, commit.parents);
    for (const proof of this.proofs) if (!proof.proven && proof.waiting.has(commit.id)) this.walk(proof, commit.id);
  }

  /** Every update with its operation; a fast-forward not proven by now is a force push. */
  classified(): ClassifiedUpdate[] {
    const proven = new Set(this.proofs.filter((proof) => proof.proven).map((proof) => proof.update));
    return this.updates.map((update) => ({ ...update, operation: fixedOperation(update) ?? (proven.has(update) ? "git.push.fast_forward" : "git.push.force") }));
  }

  private walk(proof: Proof, from: string): void {
    const stack = [from];
    while (stack.length > 0) {
      if (++this.steps > MAX_PROOF_STEPS) return;
      const id = stack.pop()!;
      proof.waiting.delete(id);
      for (const parent of this.parents.get(id) ?? []) {
        if (parent === proof.update.oldId) {
          proof.proven = true;
          proof.waiting.clear();
          return;
        }
        if (proof.reached.has(parent)) continue;
        proof.reached.add(parent);
        if (this.parents.has(parent)) stack.push(parent);
        else proof.waiting.add(parent);
      }
    }
  }
}

/** The class an update has whatever its pack holds; undefined for a branch moved from one commit to another. */
function fixedOperation(update: RefUpdate): PushOperation | undefined {
  if (isZeroId(update.newId)) return "git.ref.delete";
  if (update.ref.startsWith("refs/tags/")) return isZeroId(update.oldId) ? "git.tag.create" : "git.tag.update";
  if (isZeroId(update.oldId)) return "git.push.branch_create";
  return undefined;
}
