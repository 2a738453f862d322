import { fieldKey } from "../../operations/providers/transcript-text.js";

/**
 * The path of the first key that appears twice in one object of `text`, which must already be valid JSON
 * (`JSON.parse` keeps the last of duplicates without a word). Iterative, so nesting depth costs no stack; strings are
 * skipped with `indexOf`, so a large body costs one pass over its structure.
 */
export function findDuplicateKey(text: string): string | undefined {
  const frames: Frame[] = [];
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    const top = frames[frames.length - 1];
    switch (char) {
      case quote: {
        const end = stringEnd(text, index);
        if (top?.keys !== undefined && top.expectingKey) {
          const raw = text.slice(index + 1, end - 1);
          const key = raw.includes("\\") ? (JSON.parse(text.slice(index, end)) as string) : raw;
          if (top.keys.has(key)) return pathOf(top, key);
          top.keys.add(key);
          top.key = key;
          top.expectingKey = false;
        }
        index = end - 1;
        break;
      }
      case openBrace:
        frames.push({ parent: top, keys: new Set(), key: "", expectingKey: true, index: 0 });
        break;
      case openBracket:
        frames.push({ parent: top, keys: undefined, key: "", expectingKey: false, index: 0 });
        break;
      case closeBrace:
      case closeBracket:
        frames.pop();
        break;
      case comma:
        if (top === undefined) break;
        if (top.keys !== undefined) top.expectingKey = true;
        else top.index++;
        break;
    }
  }
  return undefined;
}

interface Frame {
  /** The container this one sits in, at its `key` (object) or `index` (array). */
  readonly parent: Frame | undefined;
  /** The keys seen so far; undefined for an array. */
  readonly keys: Set<string> | undefined;
  key: string;
  expectingKey: boolean;
  index: number;
}

const quote = 0x22;
const backslash = 0x5c;
const comma = 0x2c;
const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;

/** The index just after the string starting at `start`: the first quote not escaped by an odd run of backslashes. */
function stringEnd(text: string, start: number): number {
  for (let from = start + 1; ; ) {
    const close = text.indexOf('"', from);
    let before = close - 1;
    while (text.charCodeAt(before) === backslash) before--;
    if ((close - 1 - before) % 2 === 0) return close + 1;
    from = close + 1;
  }
}

/** The field path to `key` in `frame` (`a.b[2].c`, user keys kept printable), built only for the duplicate found. */
function pathOf(frame: Frame, key: string): string {
  let path = fieldKey(key);
  for (let parent = frame.parent; parent !== undefined; parent = parent.parent) {
    const step = parent.keys !== undefined ? fieldKey(parent.key) : `[${parent.index}]`;
    path = `${step}${path.startsWith("[") ? "" : "."}${path}`;
  }
  return path;
}
