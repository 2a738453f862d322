import { styleText } from "node:util";

/** The one JSON document of `--json`: nothing else ever goes to stdout in that mode. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(text = ""): void {
  process.stdout.write(`${text}\n`);
}

/** Columns padded to their widest cell; the last column is left ragged. */
export function printTable(headers: string[], rows: string[][]): void {
  if (rows.length === 0) {
    printLine("(none)");
    return;
  }
  for (const line of formatTable(headers, rows)) printLine(line);
}

/** The lines of a table: a header (bold on a terminal) and one line per row. */
export function formatTable(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  return [emphasize(format(headers), process.stdout), ...rows.map(format)];
}

/** Dim text, only where a terminal shows it. */
export function dim(text: string, stream: NodeJS.WriteStream): string {
  return stream.isTTY ? styleText("dim", text) : text;
}

function emphasize(text: string, stream: NodeJS.WriteStream): string {
  return stream.isTTY ? styleText("bold", text) : text;
}

export const text = (value: unknown): string => (value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value));

export interface Spinner {
  update(label: string): void;
  stop(): void;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const ERASE_LINE = "\r\x1b[2K";

/**
 * One line on stderr that spins while something runs, redrawn in place and erased at the end. Only where a person
 * watches a terminal: never on a pipe, on a dumb terminal, or when stdout is redirected (the answer would land
 * between frames).
 */
export function startSpinner(label: string): Spinner | undefined {
  const stream = process.stderr;
  if (!stream.isTTY || !process.stdout.isTTY || process.env.TERM === "dumb") return undefined;
  let frame = 0;
  const draw = () => stream.write(`${ERASE_LINE}${styleText("cyan", FRAMES[frame++ % FRAMES.length]!)} ${label}`);
  draw();
  const timer = setInterval(draw, 80);
  return {
    update(next) {
      label = next;
      draw();
    },
    stop() {
      clearInterval(timer);
      stream.write(ERASE_LINE);
    },
  };
}
