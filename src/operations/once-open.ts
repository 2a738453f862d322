import { DatabaseNotOpen } from "../store/storage-errors.js";

/**
 * A part of Agent Operations that exists once the database has opened, and a stand-in for it that can be handed out
 * before. Every use of the stand-in goes to the part once it is set; until then it throws DatabaseNotOpen, which every
 * caller already answers as an unreachable database (503 STORAGE_UNAVAILABLE with Retry-After): the server can be
 * assembled, and serve, while its database is still late.
 */
export class OnceOpen<T extends object> {
  private part: T | undefined;

  readonly standIn: T = new Proxy({} as T, {
    get: (_, property) => {
      // Not a thenable, and inspectable, while waiting: `await` and printing must not count as a use.
      if (this.part === undefined && (property === "then" || typeof property === "symbol")) return undefined;
      const part = this.get();
      const member: unknown = Reflect.get(part, property, part);
      return typeof member === "function" ? member.bind(part) : member;
    },
  });

  set(part: T): void {
    this.part = part;
  }

  get(): T {
    if (this.part === undefined) throw new DatabaseNotOpen();
    return this.part;
  }
}
