import type { Refused } from "../operations/native-calls.js";

const WORDS: Record<string, string> = {
  "git.fetch": "fetch",
  "git.push.fast_forward": "push",
  "git.push.branch_create": "new branch",
  "git.push.force": "history rewrite",
  "git.ref.delete": "ref deletion",
  "git.tag.create": "new tag",
  "git.tag.update": "tag move",
  "git.lfs.read": "LFS download",
  "git.lfs.write": "LFS upload",
};

/**
 * Why a call was refused, in words the agent's terminal shows after `axon: `: the rule that refused it, the
 * operator's reason, or what ended the wait. Never more than the decider made safe to show.
 */
export function refusalReason(refused: Refused, operation: string): string {
  const what = WORDS[operation] ?? operation;
  switch (refused.code) {
    case "operation_policy_denied":
      return refused.rule === undefined ? `${what} refused: no policy rule allows ${operation}` : `${what} refused by policy rule ${refused.rule}`;
    case "operation_approval_denied":
      return refused.reason ? `${what} denied by an operator: ${refused.reason}` : `${what} denied by an operator`;
    case "operation_approval_expired":
      return `${what} not approved in time: the request expired`;
    case "operation_canceled":
      return `${what} withdrawn before it was decided`;
    default:
      return `${what} refused: ${refused.message}`;
  }
}
